//! `#[derive(NetMessage)]` for netproto. See the `netproto` crate for documentation.
//!
//! Pipeline (serde_derive's shape): `attr` parses `#[net(...)]` into a typed form that
//! keeps spans, `parse` builds the model of the type (`ast`) with `check` resolving and
//! checking each field against its type, collecting every error; `codegen` generates the impl
//! from the model (one serialize function, one statement per field), and `schema` its `SCHEMA`, whose
//! bounds are the impl's `MAX_BITS` / `MIN_BITS`. Message sets have the same split:
//! `set::check` validates `#[net(message_set, ...)]` against the enum, `set::codegen`
//! generates the `MessageSet` impl. On error, `codegen::stub` and `set::stub` emit
//! impls that compile beside the errors, so that only the real ones are shown.

mod ast;
mod attr;
mod check;
mod codegen;
mod delta;
mod errors;
mod parse;
mod schema;
mod set;
mod tokens;
mod value;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `netproto::NetMessage`: one serialize function, `serialize_in`, generic over the
/// stream and over where the value lives (`netproto::Place`: `&Self` to write or measure,
/// `&mut Self` to read), that writes, reads, measures and traces the type; `SCHEMA`, its wire format; `MAX_BITS` /
/// `MIN_BITS`, the bit bounds of that schema (computed once, at compile time, from the
/// fields' bounds); and `blank()`, the value a reader fills in.
///
/// Works on structs (named, tuple, unit) and enums (unit, tuple and struct variants; the
/// variant index goes first, in `bits_required(0, variants - 1)` bits, in declaration
/// order). A type parameter gets a `NetMessage` bound when it appears in the type of a
/// field that goes on the wire, as serde infers its bounds; one used only by skipped
/// fields (a `PhantomData<T>` tag) gets none.
///
/// # Field attributes
///
/// | attribute | on | wire |
/// |---|---|---|
/// | `#[net(range = MIN..=MAX)]` or `MIN..MAX` | `u8`..`u64`, `i8`..`i64` | `value - MIN` in `bits_required(MIN, MAX)` bits |
/// | `#[net(bits = N)]` | `u8`..`u64`, `1 <= N <= width` | `N` raw bits (a value `>= 2^N` is rejected) |
/// | `#[net(quantize(min = A, max = B, res = R))]` | `f32` | a step of `R` in `[A, B]`, at most 32 bits |
/// | `#[net(max_len = N)]` | `String`, `Vec<T>` | length in `[0, N]`, then the bytes / elements |
/// | `#[net(skip)]` | any field with `Default` | nothing; `Default::default()` when read |
/// | `#[net(delta = LO..=HI)]` | a `range`, `bits` or `quantize` field of a `#[net(delta)]` struct | see [Delta encoding](#delta-encoding) |
///
/// A field without attributes uses its type's `NetMessage` impl: integers at full width,
/// `bool` in 1 bit, `f32` / `f64` raw, `Option<T>`, arrays, tuples and other derived
/// types. A `String` or `Vec` must have a `max_len`: a length read from the network is
/// bounded before anything is allocated.
///
/// Bounds may be literals or constant expressions (`range = 0..=MAX_PLAYERS`): literals
/// are checked by the macro, constants by `const` assertions, both at compile time. A
/// bound cannot mention `Self`.
///
/// # Type attributes
///
/// | attribute | on | effect |
/// |---|---|---|
/// | `#[net(crate = "path")]` | any derived type | generated code reaches netproto at `path` instead of `::netproto` |
/// | `#[net(message_set)]`, `max_bits = N` | an enum | see [Message sets](#message-sets) |
/// | `#[net(delta)]` | a struct or enum that is `Clone` | also derives `netproto::delta::NetDelta`, see [Delta encoding](#delta-encoding) |
///
/// `crate` is for a crate that re-exports netproto (like serde's `#[serde(crate =
/// "...")]`): its users derive through the re-export, without depending on netproto
/// themselves. The path is any path that resolves where the type is declared: an alias
/// (`use netproto as np;` and `crate = "np"`), a module of the crate
/// (`crate = "crate::net::netproto"`), or another crate (`crate = "my_engine::netproto"`).
/// It must be a string holding a path; anything else is a compile error at the value.
///
/// # Errors
///
/// Writing a value outside its declared range fails (it is never sent as some other
/// value); reading rejects values in the bit headroom above a range and unknown variant
/// indexes. Every error names the field, as `"Type.field"` (`"Type::Variant.field"`
/// in enums, `"Type.0"` for tuple fields, `"Type"` for an enum's variant index).
///
/// # Example
///
/// ```ignore
/// use netproto::NetMessage;
///
/// #[derive(NetMessage)]
/// struct PlayerInput {
///     #[net(range = 0..=100)]
///     health: u8, // 7 bits
///     #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))]
///     yaw: f32, // 13 bits
///     #[net(bits = 12)]
///     tick: u16, // 12 bits
///     fire: bool, // 1 bit
///     #[net(max_len = 32)]
///     name: String, // 6 bits of length, an align, then the bytes
///     #[net(skip)]
///     predicted: bool, // not sent
/// }
///
/// #[derive(NetMessage)]
/// enum Command {
///     Stop,                                   // index 0
///     Move { #[net(range = -8..=7)] dx: i8 }, // index 1, then 4 bits
///     Say(#[net(max_len = 64)] String),       // index 2, then the string
/// }
/// ```
///
/// # Schema
///
/// Also generated: `const SCHEMA: &'static netproto::schema::Schema`, the wire format as
/// static data (sent fields in order, their kind, declared bounds and bits), from which
/// `netproto::schema::Layout` prints the layout and `SCHEMA.fingerprint()` computes a
/// stable 64-bit fingerprint at compile time.
///
/// # Message sets
///
/// `#[net(message_set)]` on an enum whose variants each wrap one message type also
/// derives `netproto::MessageSet` (the message factory: `COUNT`, `TYPE_BITS`,
/// `type_id()`, `blank_of(id)`, `FINGERPRINT`) and `From<Payload>` for each payload type
/// that appears in one variant, and its `NetMessage::move_out` / `move_from` move only
/// the variant's payload (the channels' queues move messages with them, so a small
/// message beside a large variant costs its own size). `#[net(message_set, max_bits = N)]` makes a payload whose
/// messages could exceed `N` bits (type id included) a compile error naming it. A variant
/// that does not wrap exactly one type is a compile error.
///
/// ```ignore
/// #[derive(NetMessage)]
/// #[net(message_set, max_bits = 8000)]
/// enum GameMessage {
///     Input(PlayerInput), // type id 0
///     Chat(ChatMessage),  // type id 1
/// }
/// ```
///
/// # Delta encoding
///
/// `#[net(delta)]` on the type also derives `netproto::delta::NetDelta`: one function,
/// `serialize_delta_in`, that writes, reads or measures the value against a baseline,
/// generated from the same field model as `serialize_in`. A struct sends, per sent
/// field, one "changed" bit; an unchanged field costs only that bit. A changed field
/// with `#[net(delta = LO..=HI)]` (a ranged or `bits` integer, or a quantized float in
/// steps) sends one more bit, then `value - base` in `bits_required(LO, HI)` bits, or
/// the absolute value when the difference is outside `LO..=HI`; the reader rejects a
/// difference that lands outside the field's range. Other changed fields go whole,
/// except nested types with their own `NetDelta` impl, which recurse. An enum goes
/// whole when changed (`delta_changed` is its `PartialEq`). `DELTA_MAX_BITS` is summed
/// at compile time.
///
/// Compile errors, each at the offending token: a delta range that is empty, `0..=0`,
/// or wider than the field's own span (checked by a `const` assertion when the field's
/// bounds are constants); `delta = ..` on a bool, string, sequence, unannotated integer
/// or float, nested type or enum variant field; `delta = ..` without `#[net(delta)]`.
///
/// ```ignore
/// #[derive(NetMessage, Clone, PartialEq)]
/// #[net(delta)]
/// struct Body {
///     #[net(quantize(min = 0.0, max = 256.0, res = 0.001), delta = -511..=511)]
///     x: f32,       // 1 bit unchanged; 1 + 1 + 10 bits within ±511 mm; 1 + 1 + 18 bits else
///     at_rest: bool, // 1 bit unchanged; 1 + 1 changed
/// }
/// ```
///
/// # Performance
///
/// Every field is one statement, the same for every stream; `#[inline(always)]` lets the
/// place's projections compile to field accesses. The fast paths are derived, not
/// generated: `NetMessage::write` / `serialize` on a `netproto::WriteStream` (what
/// `encode` and the channel layer call) run the same function on a word packer when the
/// buffer has room for `MAX_BITS`, which gathers consecutive fields, across nested types
/// and enum variant indexes, into 64-bit words; `serialize` on a `netproto::ReadStream`
/// (what `decode` and the channel layer call) runs it on a word reader, which takes the
/// input a 64-bit word at a time (both through `Stream::serialize_message`). The bytes, values and errors are the plain streams'. Tracing
/// streams (`Stream::TRACING`) get `begin_field(name)` / `end_field()` around each field
/// (`name` is the field's own name, or its index in a tuple; an enum's variant index
/// belongs to the enclosing field and gets no call of its own).
#[proc_macro_derive(NetMessage, attributes(net))]
pub fn derive_net_message(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input).into()
}

/// The derive on a parsed input: the impls, or every error beside stub impls.
fn expand(input: &DeriveInput) -> proc_macro2::TokenStream {
    match parse::input(input) {
        Ok(model) => codegen::expand(&model),
        Err(errors) => {
            // The type's attributes again, for the stubs: their errors are among `errors`.
            let attrs = attr::type_attrs(&input.attrs, &mut crate::errors::Errors::default());
            let mut out = errors.to_compile_error();
            out.extend(codegen::stub(input, &attrs.crate_path()));
            out.extend(set::stub(input, &attrs));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    /// Every generated path goes through `#[net(crate = "...")]`: with one given, the
    /// output never names `::netproto` (impls, schema, message sets, stubs).
    #[test]
    fn every_path_goes_through_the_crate_path() {
        let inputs: [syn::DeriveInput; 4] = [
            parse_quote! {
                #[net(crate = "np", delta)]
                struct All<T> {
                    #[net(range = 0..=100)] a: u8,
                    #[net(range = 0..=LIMIT)] b: u16,
                    #[net(bits = 3)] c: u8,
                    #[net(bits = BITS)] d: u32,
                    #[net(quantize(min = -1.0, max = 1.0, res = 0.01), delta = -3..=3)] e: f32,
                    #[net(quantize(min = -HALF, max = HALF, res = 0.5))] f: f32,
                    #[net(max_len = 4)] g: String,
                    #[net(max_len = LEN)] h: Vec<T>,
                    i: bool, j: u64, k: f64, l: Option<T>, m: Nested,
                    #[net(skip)] n: u8,
                }
            },
            parse_quote! {
                #[net(message_set, max_bits = 100, crate = "np")]
                enum Set { A(A), B(B) }
            },
            // Errors: the stubs.
            parse_quote! {
                #[net(crate = "np")]
                struct Broken { #[net(range = 5..=1)] a: u8 }
            },
            parse_quote! {
                #[net(crate = "np", message_set)]
                enum BrokenSet { A(A), B }
            },
        ];
        for (i, input) in inputs.iter().enumerate() {
            let out = super::expand(input).to_string();
            assert!(out.contains("np :: NetMessage"), "{out}");
            assert_eq!(out.contains("np :: MessageSet"), i % 2 == 1, "{out}");
            assert_eq!(out.contains("np :: delta :: NetDelta"), i == 0, "{out}");
            assert!(!out.contains(":: netproto"), "{out}");
        }
    }
}
