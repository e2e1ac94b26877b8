//! The checker: measures like the measurer and validates like the writer, in one
//! pass that writes nothing.

use super::{Place, Stream};
use crate::error::{ErrorKind, StreamError};

/// Counts bits as [`MeasureStream`](super::MeasureStream) does (every align charged 7
/// bits) and refuses what [`WriteStream`](super::WriteStream) refuses, with the same
/// errors, but stores nothing: what a send needs to know of a message it will write
/// into a packet later (its size bound, and that it can be written), for the price of
/// one pass without the bit packing.
///
/// The writer's only other refusal, a full buffer, cannot happen to a writer given the
/// measured size.
#[derive(Debug, Default)]
pub(crate) struct CheckStream {
    bits: usize,
}

impl CheckStream {
    /// The bits `message` measures, or the error writing it would give.
    pub(crate) fn check<M: crate::NetMessage>(message: &M) -> Result<usize, StreamError> {
        let mut stream = Self::default();
        message.write(&mut stream)?;
        Ok(stream.bits)
    }
}

impl Stream for CheckStream {
    type Error = StreamError;
    // Takes the values from the message, as a writer does, to check them.
    const IS_WRITING: bool = true;
    const IS_READING: bool = false;

    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), StreamError> {
        // The writer's checks but room: 1 <= bits <= 64, no bits above `bits`.
        let wide = (*value >> (bits.wrapping_sub(1) & 63)) >> 1;
        if (bits.wrapping_sub(1) >= 64) | (wide != 0) {
            return Err(StreamError::new(ErrorKind::OutOfRange));
        }
        self.bits += bits as usize;
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), StreamError> {
        self.bits += 7;
        Ok(())
    }

    #[inline(always)]
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), StreamError> {
        self.bits += 7 + bytes.get().len() * 8;
        Ok(())
    }

    #[inline(always)]
    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), StreamError> {
        if ok {
            Ok(())
        } else {
            Err(StreamError::new(kind))
        }
    }

    #[inline(always)]
    fn in_field(err: StreamError, field: &'static str) -> StreamError {
        err.in_field(field)
    }

    fn bits_processed(&self) -> usize {
        self.bits
    }

    fn bits_remaining(&self) -> usize {
        usize::MAX - self.bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantize::Quantization;
    use crate::schema::Schema;
    use crate::stream::WriteStream;

    /// The calls a derived message makes: a ranged int, a quantized float, a bounded
    /// string, raw bits, an align and bytes, each with a field name.
    #[derive(Clone, Debug)]
    struct Probe {
        health: u8,
        aim: f32,
        name: String,
        raw: u64,
    }

    const AIM: Quantization = Quantization::new(-1.0, 1.0, 0.01);

    impl crate::NetMessage for Probe {
        const MAX_BITS: usize = 7 + 8 + 3 + 4 * 8 + 7 + 3 + 7 + 16;
        const MIN_BITS: usize = 7 + 8 + 3 + 7 + 3 + 7 + 16;
        const SCHEMA: &'static Schema = &Schema::BOOL;
        fn blank() -> Self {
            Probe {
                health: 0,
                aim: 0.0,
                name: String::new(),
                raw: 0,
            }
        }
        fn serialize_in<S: Stream, P: Place<Self>>(this: P, s: &mut S) -> Result<(), S::Error> {
            let p = this.get();
            s.serialize_int(&mut p.health.clone(), 0, 100)
                .map_err(|e| S::in_field(e, "P.health"))?;
            s.serialize_quantized(&mut p.aim.clone(), &AIM)
                .map_err(|e| S::in_field(e, "P.aim"))?;
            s.serialize_string(&p.name, 4)
                .map_err(|e| S::in_field(e, "P.name"))?;
            s.serialize_bits(&mut p.raw.clone(), 3)
                .map_err(|e| S::in_field(e, "P.raw"))?;
            s.serialize_align()?;
            s.serialize_bytes(&b"ab"[..])
        }
    }

    /// Every refusal of the writer, at the checker: the same verdict and error (kind
    /// and field), and on success the measurer's count.
    #[test]
    fn the_checker_refuses_what_the_writer_refuses_and_measures_what_the_measurer_measures() {
        let ok = Probe {
            health: 100,
            aim: 0.5,
            name: "ab".into(),
            raw: 7,
        };
        let cases = [
            ok.clone(),
            Probe {
                health: 101,
                ..ok.clone()
            },
            Probe {
                aim: 1.5,
                ..ok.clone()
            },
            Probe {
                aim: f32::NAN,
                ..ok.clone()
            },
            Probe {
                name: "abcde".into(),
                ..ok.clone()
            },
            Probe {
                name: "a\0".into(),
                ..ok.clone()
            },
            Probe {
                raw: 8,
                ..ok.clone()
            },
        ];
        let mut refused = 0;
        for message in &cases {
            let mut buf = vec![0u8; crate::codec::measure(message).div_ceil(8) + 8];
            let written = crate::NetMessage::write(message, &mut WriteStream::new(&mut buf));
            match (written, CheckStream::check(message)) {
                (Ok(()), Ok(bits)) => assert_eq!(bits, crate::codec::measure(message)),
                (Err(w), Err(c)) => {
                    assert_eq!(w, c);
                    assert!(c.field().is_some(), "{c:?}");
                    refused += 1;
                }
                (w, c) => panic!("{message:?}: writer {w:?}, checker {c:?}"),
            }
        }
        assert_eq!(refused, cases.len() - 1);
    }
}
