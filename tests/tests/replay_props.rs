//! Property test of the replay window: the bitmap (`ReplayProtection`) gives the
//! decisions of the reference's 256 slots (a straightforward copy of which is kept
//! here, [`Ring`]) on random streams of sequences, whether each is recorded only when
//! accepted (as `read_packet` does) or whatever the window said.

use netproto::internals::netcode::ReplayProtection;
use proptest::prelude::*;

mod common;

/// The seed of this file's property tests.
const SEED: u64 = 0x7265_706c_6179_2121;

/// The reference's window (netcode.c): 256 slots, each the last sequence recorded
/// with that value modulo 256, `u64::MAX` when empty.
struct Ring {
    most_recent: u64,
    received: [u64; 256],
}

impl Ring {
    fn with_most_recent(most_recent: u64) -> Self {
        Self {
            most_recent,
            received: [u64::MAX; 256],
        }
    }

    fn already_received(&self, sequence: u64) -> bool {
        if sequence.wrapping_add(256) <= self.most_recent {
            return true;
        }
        let slot = self.received[(sequence % 256) as usize];
        slot != u64::MAX && slot >= sequence
    }

    fn advance(&mut self, sequence: u64) {
        if sequence > self.most_recent {
            self.most_recent = sequence;
        }
        self.received[(sequence % 256) as usize] = sequence;
    }
}

/// The next sequence from the one before: mostly close to it (ahead, behind, a
/// repeat), sometimes a jump of any size, sometimes anywhere (near 2^64 included).
fn step() -> impl Strategy<Value = (u8, u64)> {
    prop_oneof![
        6 => (Just(0u8), 0u64..8),
        4 => (Just(1u8), 0u64..300),
        3 => (Just(2u8), 0u64..300),
        1 => (Just(3u8), 250u64..1200),
        1 => (Just(4u8), any::<u64>()),
        1 => (Just(5u8), 0u64..600),
    ]
}

fn next(previous: u64, (kind, n): (u8, u64)) -> u64 {
    match kind {
        0 | 3 => previous.wrapping_add(n),
        1 => previous.wrapping_sub(n),
        2 => previous.wrapping_add(n).wrapping_sub(150),
        4 => n,
        _ => u64::MAX - n,
    }
}

/// A start: 0 (a session), small, anywhere, or near 2^64.
fn start() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..600,
        any::<u64>(),
        (0u64..600).prop_map(|n| u64::MAX - n),
    ]
}

proptest! {
    #![proptest_config(common::proptest_config(3000, SEED))]

    #[test]
    fn the_bitmap_decides_as_the_reference_ring(
        most_recent in start(),
        first in start(),
        steps in prop::collection::vec((step(), any::<bool>(), any::<u64>()), 1..400),
        record_all in any::<bool>(),
    ) {
        let mut ring = Ring::with_most_recent(most_recent);
        let mut window = ReplayProtection::with_most_recent(most_recent);
        let mut sequence = first;
        for (i, (s, record_anyway, probe)) in steps.into_iter().enumerate() {
            sequence = next(sequence, s);
            let expected = ring.already_received(sequence);
            prop_assert_eq!(window.already_received(sequence), expected, "step {} seq {:#x}", i, sequence);
            // A probe anywhere, and close around the most recent.
            for p in [probe, ring.most_recent.wrapping_sub(probe % 300), ring.most_recent.wrapping_add(probe % 4)] {
                prop_assert_eq!(window.already_received(p), ring.already_received(p), "step {} probe {:#x}", i, p);
            }
            if !expected || (record_all && record_anyway) {
                ring.advance(sequence);
                window.advance(sequence);
            }
            prop_assert_eq!(window.most_recent(), ring.most_recent);
        }
        // Every sequence around the most recent, at the end.
        let top = ring.most_recent;
        for p in (0..600u64).map(|d| top.wrapping_sub(300).wrapping_add(d)) {
            prop_assert_eq!(window.already_received(p), ring.already_received(p), "end probe {:#x}", p);
        }
    }
}
