//! Shared helpers of netproto's integration tests; the tests themselves are in `tests/`,
//! the benchmarks in `benches/`, the compile-fail cases in `ui/`.

use std::time::Duration;

/// A [`Duration`] in `f64` milliseconds, the unit the tests' expectations are
/// written in (round trips of 50 ms, thresholds of 250 ms).
pub trait Millis {
    /// Milliseconds.
    fn ms(self) -> f64;
}

impl Millis for Duration {
    fn ms(self) -> f64 {
        self.as_secs_f64() * 1000.0
    }
}

pub mod fixtures {
    //! The reference vectors in `tests/fixtures/` (JSON Lines produced by the reference C
    //! libraries `serialize` and `reliable`).

    use std::fs;
    use std::path::PathBuf;

    use serde_json::Value;

    /// Every line of `tests/fixtures/<name>` as JSON. Panics with the file and line on a
    /// read or parse failure (these are the tests' own fixtures).
    pub fn load(name: &str) -> Vec<Value> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1))
            })
            .collect()
    }

    /// Bytes of a lowercase hex string.
    pub fn hex(s: &str) -> Vec<u8> {
        assert!(s.len().is_multiple_of(2), "odd hex length");
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_else(|e| panic!("{s}: {e}")))
            .collect()
    }

    /// Lowercase hex of bytes.
    pub fn to_hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

pub mod delta_workload;
pub mod fuzz;
pub mod load;
pub mod nonce_log;
pub mod sealer;
pub mod serial;

pub mod sim_stack;
pub mod token_world;

pub mod endpoint {
    //! The one-call receive the tests were written against, on top of the endpoint's
    //! two-phase receive.

    use netproto::Time;
    use netproto::packet::{Endpoint, Incoming, ReceiveError, Received, Sequence};

    /// Receives `datagram` and, when it completes a packet, gives `verdict` its
    /// sequence and payload: `true` accepts it ([`Received::Packet`] with its acks),
    /// `false` refuses it ([`ReceiveError::Rejected`]).
    pub fn receive_with(
        endpoint: &mut Endpoint,
        now: f64,
        datagram: &[u8],
        verdict: impl FnOnce(Sequence, &[u8]) -> bool,
    ) -> Result<Received, ReceiveError> {
        match endpoint.receive(Time::from_secs_f64(now), datagram)? {
            Incoming::Packet(packet) => {
                let sequence = packet.sequence();
                if verdict(sequence, packet.payload()) {
                    Ok(Received::Packet {
                        sequence,
                        acks: packet.accept(),
                    })
                } else {
                    packet.refuse();
                    Err(ReceiveError::Rejected(sequence))
                }
            }
            fragment => Ok(fragment.accept()),
        }
    }
}

/// Payloads written by hand, for hostile-input tests of the message layer.
pub mod handmade {
    use netproto::{Stream, StreamError, WriteStream};

    /// Writes a payload with `f` into a buffer of up to 4096 bytes.
    pub fn build(f: impl FnOnce(&mut WriteStream<'_>) -> Result<(), StreamError>) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let mut w = WriteStream::new(&mut buf);
        f(&mut w).expect("test payload fits");
        let len = w.finish();
        buf.truncate(len);
        buf
    }

    /// Writes `value` in `n` bits.
    pub fn bits(w: &mut WriteStream<'_>, value: u64, n: u32) -> Result<(), StreamError> {
        w.serialize_bits(&mut { value }, n)
    }
}
