//! The replay window of the reference, kept as a bitmap: the most recent sequence
//! and one bit for each of the 256 sequences up to it (40 bytes where the
//! reference's 256 slots take 2 KiB), with the reference's decisions.

/// Slots in the replay window.
pub const REPLAY_PROTECTION_BUFFER_SIZE: usize = 256;

const SIZE: u64 = REPLAY_PROTECTION_BUFFER_SIZE as u64;
const WORDS: usize = REPLAY_PROTECTION_BUFFER_SIZE / 64;

/// The 256-entry replay window of the reference, applied to keep-alive, payload and
/// disconnect packets: a sequence at or below the most recent minus 256 is refused as
/// too old, and a sequence whose slot holds a sequence at or above it as a replay.
///
/// The arithmetic is the reference's, in wrapping 64-bit: "too old" is
/// `sequence + 256 <= most_recent` with `sequence + 256` wrapping. One consequence,
/// checked against the reference vectors: once the most recent sequence is 256 or
/// more, every sequence in the top 256 below 2^64 wraps to a small value and is
/// refused as too old (so the reference's empty-slot mark, `u64::MAX`, never decides
/// anything). Sequences are per connection and start at 0, so a session never gets
/// there.
///
/// The reference's slot `s % 256` holds the last sequence recorded there, which is
/// at most the most recent one. So a sequence above the most recent is never found
/// in its slot, and one that is not too old (within 256 of the most recent) is found
/// exactly when its slot holds that very sequence: an older one in the same slot is
/// 256 or more below it, a newer one would be above the most recent. One bit per
/// slot, "the slot holds the sequence of the window that maps to it", gives the same
/// decisions; moving the most recent sequence on clears the bits of the sequences it
/// passes (their slots hold older ones), and recording a sequence too old for the
/// window clears the bit of its slot (the reference overwrites the slot with it).
///
/// ```
/// use netproto::internals::netcode::ReplayProtection;
///
/// let mut window = ReplayProtection::new();
/// assert!(!window.already_received(5));
/// window.advance(5);
/// assert!(window.already_received(5));
/// window.advance(300);
/// assert!(window.already_received(44)); // 44 + 256 <= 300: too old
/// assert!(!window.already_received(45));
/// ```
#[derive(Clone, Debug)]
pub struct ReplayProtection {
    most_recent: u64,
    /// Bit `s % 256` is set when sequence `s`, in the window (at most the most recent
    /// and less than 256 below it), was recorded (and not overwritten since, as the
    /// reference's slot would be, by a sequence too old for the window).
    received: [u64; WORDS],
}

impl Default for ReplayProtection {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplayProtection {
    /// A fresh window: most recent sequence 0, every slot empty.
    pub fn new() -> Self {
        Self::with_most_recent(0)
    }

    /// A window whose most recent sequence is `most_recent` and whose slots are empty.
    pub fn with_most_recent(most_recent: u64) -> Self {
        Self {
            most_recent,
            received: [0; WORDS],
        }
    }

    /// Whether `sequence` must be refused: too old, or already received.
    pub fn already_received(&self, sequence: u64) -> bool {
        if sequence.wrapping_add(SIZE) <= self.most_recent {
            return true;
        }
        // Not too old: at most the most recent means within 256 of it, in the window.
        sequence <= self.most_recent && self.bit(sequence)
    }

    /// Asks the CPU for the window (a server does it for a batch of datagrams before
    /// opening any).
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch(&self.received);
    }

    /// Records `sequence` as received (call only after its packet authenticated).
    pub fn advance(&mut self, sequence: u64) {
        if sequence > self.most_recent {
            let passed = sequence - self.most_recent;
            if passed >= SIZE {
                self.received = [0; WORDS];
            } else {
                self.clear_after(self.most_recent, passed);
            }
            self.most_recent = sequence;
            self.set(sequence, true);
        } else {
            // In the window: its slot holds it now. Too old: its slot holds it, no
            // longer the window's sequence of that slot.
            self.set(sequence, self.most_recent - sequence < SIZE);
        }
    }

    /// The highest sequence recorded (or given to [`with_most_recent`](Self::with_most_recent)).
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub fn most_recent(&self) -> u64 {
        self.most_recent
    }

    /// Word and mask of `sequence`'s bit: its value modulo 256.
    fn position(sequence: u64) -> (usize, u64) {
        let index = usize::from(sequence.to_le_bytes()[0]);
        (index / 64, 1 << (index % 64))
    }

    fn bit(&self, sequence: u64) -> bool {
        let (word, mask) = Self::position(sequence);
        self.received[word] & mask != 0
    }

    fn set(&mut self, sequence: u64, value: bool) {
        let (word, mask) = Self::position(sequence);
        if value {
            self.received[word] |= mask;
        } else {
            self.received[word] &= !mask;
        }
    }

    /// Clears the bits of the `count` (under 256) sequences after `from`.
    fn clear_after(&mut self, from: u64, count: u64) {
        let mut index = usize::from(from.wrapping_add(1).to_le_bytes()[0]);
        let mut left = count as usize;
        while left > 0 {
            let bit = index % 64;
            let n = (64 - bit).min(left);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            self.received[index / 64] &= !mask;
            left -= n;
            index = (index + n) % REPLAY_PROTECTION_BUFFER_SIZE;
        }
    }
}
