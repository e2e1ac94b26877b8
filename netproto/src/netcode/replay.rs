//! The replay window of the reference: 256 slots, each holding the last sequence
//! received with that value modulo 256 (`u64::MAX` marks an empty slot).

/// Slots in the replay window.
pub const REPLAY_PROTECTION_BUFFER_SIZE: usize = 256;

const EMPTY: u64 = u64::MAX;
const SIZE: u64 = REPLAY_PROTECTION_BUFFER_SIZE as u64;

/// The 256-entry replay window of the reference, applied to keep-alive, payload and
/// disconnect packets: a sequence at or below the most recent minus 256 is refused as
/// too old, and a sequence whose slot holds a sequence at or above it as a replay.
///
/// The arithmetic is the reference's, in wrapping 64-bit: "too old" is
/// `sequence + 256 <= most_recent` with `sequence + 256` wrapping, and an empty slot is
/// marked `u64::MAX` (so a received `u64::MAX` leaves its slot looking empty). One
/// consequence, checked against the reference vectors: once the most recent sequence
/// is 256 or more, every sequence in the top 256 below 2^64 wraps to a small value and
/// is refused as too old. Sequences are per connection and start at 0, so a session
/// never gets there.
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
    received: [u64; REPLAY_PROTECTION_BUFFER_SIZE],
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
            received: [EMPTY; REPLAY_PROTECTION_BUFFER_SIZE],
        }
    }

    /// Whether `sequence` must be refused: too old, or already received.
    pub fn already_received(&self, sequence: u64) -> bool {
        if sequence.wrapping_add(SIZE) <= self.most_recent {
            return true;
        }
        let slot = self.received[Self::index(sequence)];
        slot != EMPTY && slot >= sequence
    }

    /// Asks the CPU for the window's position and the slot the next sequence takes
    /// (a server does it for a batch of datagrams before opening any).
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch_at(
            &self.received,
            Self::index(self.most_recent.wrapping_add(1)),
        );
    }

    /// Records `sequence` as received (call only after its packet authenticated).
    pub fn advance(&mut self, sequence: u64) {
        if sequence > self.most_recent {
            self.most_recent = sequence;
        }
        self.received[Self::index(sequence)] = sequence;
    }

    /// The highest sequence recorded (or given to [`with_most_recent`](Self::with_most_recent)).
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub fn most_recent(&self) -> u64 {
        self.most_recent
    }

    /// Slot of `sequence`: its value modulo 256 (the low byte, always in range).
    fn index(sequence: u64) -> usize {
        usize::from(sequence.to_le_bytes()[0])
    }
}
