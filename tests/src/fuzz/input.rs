//! Reading a fuzz input as a script, and making inputs: the mutator of the smoke test
//! and the seed type its generators return.

use netproto::sim::Rng;

/// A cursor over a fuzz input read as a script of ops and operands. Reading past the
/// end yields `None` (ops) or what is left (byte strings): every input is a script.
#[derive(Debug)]
pub struct Script<'a> {
    data: &'a [u8],
}

impl<'a> Script<'a> {
    /// A script over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte, or `None` at the end.
    pub fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(b)
    }

    /// The next little-endian `u16` (missing bytes read as 0).
    pub fn u16(&mut self) -> u16 {
        let lo = self.byte().unwrap_or(0);
        let hi = self.byte().unwrap_or(0);
        u16::from_le_bytes([lo, hi])
    }

    /// The next `n` bytes, or what is left.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// A byte string prefixed by its `u16` length.
    pub fn blob(&mut self) -> &'a [u8] {
        let n = usize::from(self.u16());
        self.bytes(n)
    }
}

/// Appends `bytes` to a script as a blob (its `u16` length, then the bytes).
pub fn push_blob(script: &mut Vec<u8>, bytes: &[u8]) {
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    script.extend_from_slice(&len.to_le_bytes());
    script.extend_from_slice(&bytes[..usize::from(len)]);
}

// ---------------------------------------------------------------------------------
// Inputs for the smoke test and the seed corpus.
// ---------------------------------------------------------------------------------

/// Mutates `input` with 1 to 4 of: bit flips, random bytes, truncation, extension with
/// random bytes, insertion and deletion of bytes, a splice with `other`, or (rarely) a
/// whole random input.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = out.len() as u64;
        match rng.below(16) {
            0..=4 if len > 0 => {
                let bit = rng.below(len * 8);
                out[(bit / 8) as usize] ^= 1 << (bit % 8);
            }
            5..=6 if len > 0 => {
                let at = rng.below(len) as usize;
                out[at] = rng.next_u64() as u8;
            }
            7..=8 if len > 0 => out.truncate(rng.below(len) as usize),
            9 => {
                let extra = 1 + rng.below(16) as usize;
                let mut bytes = vec![0u8; extra];
                rng.fill_bytes(&mut bytes);
                out.extend_from_slice(&bytes);
            }
            10 => {
                let at = rng.below(len + 1) as usize;
                out.insert(at, rng.next_u64() as u8);
            }
            11 if len > 0 => {
                out.remove(rng.below(len) as usize);
            }
            12..=13 => {
                let cut = rng.below(len + 1) as usize;
                let from = rng.below(other.len() as u64 + 1) as usize;
                out.truncate(cut);
                out.extend_from_slice(&other[from..]);
            }
            14 if len > 1 => {
                // Swap two bytes (reorders fields).
                let (i, j) = (rng.below(len) as usize, rng.below(len) as usize);
                out.swap(i, j);
            }
            15 if rng.below(8) == 0 => {
                let n = rng.below(64) as usize;
                out = vec![0u8; n];
                rng.fill_bytes(&mut out);
            }
            _ => {
                let at = rng.below(len + 1) as usize;
                out.insert(at, 0);
            }
        }
    }
    out
}

/// A valid input of a target, and what its generator knows the target must make of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seed {
    /// The input.
    pub input: Vec<u8>,
    /// What the target function returns for it (messages decoded, datagrams or
    /// payloads taken, messages delivered), when the generator knows it exactly.
    pub taken: Option<usize>,
    /// Reliable messages the script queues (connection targets): every one of them
    /// must arrive, in order.
    pub reliable: usize,
    /// Sessions the script opens (`connection_script`: one per connect with a fresh
    /// token, none with a token already used).
    pub sessions: usize,
    /// Whether the script seals datagrams itself (`connection_connected`), which
    /// leaves delivery unchecked for content: every other script is checked in full.
    pub tampered: bool,
}

impl Seed {
    /// A seed the target must take `taken` units of.
    pub fn taking(input: Vec<u8>, taken: usize) -> Self {
        Self {
            input,
            taken: Some(taken),
            ..Self::default()
        }
    }
}
