//! The schema fingerprint: 64-bit FNV-1a over the canonical encoding of a schema
//! (specified on [`Schema::write_canonical`]).
//!
//! Two implementations of one encoding: [`hash`] feeds the bytes straight into the hash
//! in a `const fn` (so fingerprints are compile-time constants), [`encode`] writes them
//! out (so the encoding can be inspected and tested). The tests check they agree.

use super::{Field, Kind, Schema};

/// The FNV-1a 64-bit offset basis.
pub(crate) const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// The FNV-1a 64-bit prime.
pub(crate) const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`: start from the offset basis `0xcbf29ce484222325`; for each
/// byte, xor it into the state, then multiply by the prime `0x100000001b3` (wrapping).
///
/// ```
/// use netproto::schema::fnv1a_64;
///
/// assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
/// assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
/// ```
pub const fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes_into(FNV_OFFSET_BASIS, bytes)
}

const fn bytes_into(mut state: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        state ^= bytes[i] as u64;
        state = state.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    state
}

const fn u8_into(state: u64, byte: u8) -> u64 {
    bytes_into(state, &[byte])
}

const fn u32_into(state: u64, value: u32) -> u64 {
    bytes_into(state, &value.to_le_bytes())
}

const fn u64_into(state: u64, value: u64) -> u64 {
    bytes_into(state, &value.to_le_bytes())
}

const fn str_into(state: u64, s: &str) -> u64 {
    bytes_into(u32_into(state, s.len() as u32), s.as_bytes())
}

const fn fields_into(mut state: u64, fields: &[Field]) -> u64 {
    state = u32_into(state, fields.len() as u32);
    let mut i = 0;
    while i < fields.len() {
        state = str_into(state, fields[i].name);
        state = hash(fields[i].schema, state);
        i += 1;
    }
    state
}

/// Continues the FNV-1a `state` with the canonical encoding of `schema`.
pub(super) const fn hash(schema: &Schema, state: u64) -> u64 {
    let mut state = str_into(state, schema.name);
    match schema.kind {
        Kind::Bool => u8_into(state, 0x01),
        Kind::Int { ty, min, max } => {
            state = u8_into(state, 0x02);
            state = u8_into(state, ty.code());
            state = bytes_into(state, &min.to_le_bytes());
            bytes_into(state, &max.to_le_bytes())
        }
        Kind::Bits { ty, bits } => {
            state = u8_into(state, 0x03);
            state = u8_into(state, ty.code());
            u32_into(state, bits)
        }
        Kind::F32 => u8_into(state, 0x04),
        Kind::F64 => u8_into(state, 0x05),
        Kind::Quantized { min, max, res, .. } => {
            state = u8_into(state, 0x06);
            state = u32_into(state, min.to_bits());
            state = u32_into(state, max.to_bits());
            u32_into(state, res.to_bits())
        }
        Kind::String { max_len } => u32_into(u8_into(state, 0x07), max_len),
        Kind::Sequence { max_len, element } => {
            state = u32_into(u8_into(state, 0x08), max_len);
            hash(element, state)
        }
        Kind::Option(inner) => hash(inner, u8_into(state, 0x09)),
        Kind::Array { len, element } => {
            state = u64_into(u8_into(state, 0x0a), len as u64);
            hash(element, state)
        }
        Kind::Tuple(elements) => {
            state = u32_into(u8_into(state, 0x0b), elements.len() as u32);
            let mut i = 0;
            while i < elements.len() {
                state = hash(elements[i], state);
                i += 1;
            }
            state
        }
        Kind::Struct(fields) => fields_into(u8_into(state, 0x0c), fields),
        Kind::Enum(variants) => {
            state = u32_into(u8_into(state, 0x0d), variants.len() as u32);
            let mut i = 0;
            while i < variants.len() {
                state = str_into(state, variants[i].name);
                state = fields_into(state, variants[i].fields);
                i += 1;
            }
            state
        }
        Kind::Opaque => {
            state = u64_into(u8_into(state, 0x0e), schema.min_bits as u64);
            u64_into(state, schema.max_bits as u64)
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_fields(out: &mut Vec<u8>, fields: &[Field]) {
    out.extend_from_slice(&(fields.len() as u32).to_le_bytes());
    for field in fields {
        put_str(out, field.name);
        encode(field.schema, out);
    }
}

/// Appends the canonical encoding of `schema` to `out`.
pub(super) fn encode(schema: &Schema, out: &mut Vec<u8>) {
    put_str(out, schema.name);
    match schema.kind {
        Kind::Bool => out.push(0x01),
        Kind::Int { ty, min, max } => {
            out.extend_from_slice(&[0x02, ty.code()]);
            out.extend_from_slice(&min.to_le_bytes());
            out.extend_from_slice(&max.to_le_bytes());
        }
        Kind::Bits { ty, bits } => {
            out.extend_from_slice(&[0x03, ty.code()]);
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Kind::F32 => out.push(0x04),
        Kind::F64 => out.push(0x05),
        Kind::Quantized { min, max, res, .. } => {
            out.push(0x06);
            for v in [min, max, res] {
                out.extend_from_slice(&v.to_bits().to_le_bytes());
            }
        }
        Kind::String { max_len } => {
            out.push(0x07);
            out.extend_from_slice(&max_len.to_le_bytes());
        }
        Kind::Sequence { max_len, element } => {
            out.push(0x08);
            out.extend_from_slice(&max_len.to_le_bytes());
            encode(element, out);
        }
        Kind::Option(inner) => {
            out.push(0x09);
            encode(inner, out);
        }
        Kind::Array { len, element } => {
            out.push(0x0a);
            out.extend_from_slice(&(len as u64).to_le_bytes());
            encode(element, out);
        }
        Kind::Tuple(elements) => {
            out.push(0x0b);
            out.extend_from_slice(&(elements.len() as u32).to_le_bytes());
            for element in elements {
                encode(element, out);
            }
        }
        Kind::Struct(fields) => {
            out.push(0x0c);
            put_fields(out, fields);
        }
        Kind::Enum(variants) => {
            out.push(0x0d);
            out.extend_from_slice(&(variants.len() as u32).to_le_bytes());
            for variant in variants {
                put_str(out, variant.name);
                put_fields(out, variant.fields);
            }
        }
        Kind::Opaque => {
            out.push(0x0e);
            out.extend_from_slice(&(schema.min_bits as u64).to_le_bytes());
            out.extend_from_slice(&(schema.max_bits as u64).to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{IntType, Variant};
    use super::*;

    fn canonical(schema: &Schema) -> Vec<u8> {
        let mut out = Vec::new();
        schema.write_canonical(&mut out);
        out
    }

    /// The published FNV-1a 64 test vectors.
    #[test]
    fn fnv1a_vectors() {
        assert_eq!(fnv1a_64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn const_hash_agrees_with_the_written_encoding() {
        const Q: Schema = Schema::quantized(-1.0, 1.0, 0.01);
        const OPT: Schema = Schema::option(&Q);
        const STR: Schema = Schema::string(140);
        const SEQ: Schema = Schema::sequence(8, &Schema::BOOL);
        const ARR: Schema = Schema::array(3, &Schema::F64);
        const TUP: Schema = Schema::tuple(&[&Schema::F32, &STR]);
        const BITS: Schema = Schema::bits(IntType::U16, 12);
        const INT: Schema = Schema::int(IntType::I8, -7, 7);
        const OPAQUE: Schema = Schema::opaque("Mine", 3, 9);
        const S: Schema = Schema::structure(
            "S",
            &[
                Field::new("q", &OPT),
                Field::new("s", &SEQ),
                Field::new("a", &ARR),
                Field::new("t", &TUP),
                Field::new("b", &BITS),
                Field::new("i", &INT),
                Field::new("o", &OPAQUE),
            ],
        );
        const E: Schema = Schema::enumeration(
            "E",
            &[
                Variant::new("A", &[]),
                Variant::new("B", &[Field::new("0", &S)]),
            ],
        );
        for schema in [
            &Q, &OPT, &STR, &SEQ, &ARR, &TUP, &BITS, &INT, &OPAQUE, &S, &E,
        ] {
            assert_eq!(schema.fingerprint(), fnv1a_64(&canonical(schema)));
        }
    }

    #[test]
    fn canonical_bytes_of_small_schemas() {
        assert_eq!(canonical(&Schema::BOOL), b"\x04\0\0\0bool\x01");
        let mut int = b"\x02\0\0\0u8\x02\x01".to_vec();
        int.extend_from_slice(&0i128.to_le_bytes());
        int.extend_from_slice(&100i128.to_le_bytes());
        assert_eq!(canonical(&Schema::int(IntType::U8, 0, 100)), int);
        const P: Schema = Schema::structure("P", &[Field::new("hp", &Schema::BOOL)]);
        assert_eq!(
            canonical(&P),
            b"\x01\0\0\0P\x0c\x01\0\0\0\x02\0\0\0hp\x04\0\0\0bool\x01"
        );
    }
}
