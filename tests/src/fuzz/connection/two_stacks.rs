//! Target: two full stacks driven by a script over a faulty network.

use super::duo::{InFlight, Origin};
use super::*;

/// Two connected stacks (keys and token from the script's first two bytes) and a
/// script (`op % 10`): `0`/`1` the client / the server queues a seeded message
/// (channel byte, `u16` seed); `2` tick (`n + 1` ms); `3` deliver the oldest datagram
/// in flight; `4` drop it; `5` duplicate it (the copy is a replay); `6` move it to the
/// back (reordering); `7` deliver everything in flight; `8` inject a raw blob into a
/// side; `9` flip one bit of the oldest datagram in flight. Then a perfect network
/// drains the queues. Injected and flipped datagrams must be dropped without effect,
/// so every script is checked for content: reliable messages all arrive, in order,
/// unaltered, unreliable ones at most once each; bounds hold throughout; the run is
/// deterministic. Returns the number of messages delivered.
pub fn two_stacks(data: &[u8]) -> usize {
    two_stacks_outcome(data).delivered
}

/// [`two_stacks`], with everything the run counted.
pub fn two_stacks_outcome(data: &[u8]) -> DuoOutcome {
    let a = run_two_stacks(data);
    let b = run_two_stacks(data);
    assert_eq!(a, b, "the stacks are not deterministic");
    a
}

fn run_two_stacks(data: &[u8]) -> DuoOutcome {
    let mut script = Script::new(data);
    let mut s = Duo::connected(u64::from(script.u16()));
    while let Some(op) = script.byte() {
        match op % 10 {
            0 | 1 => {
                let channel = usize::from(script.byte().unwrap_or(0) & 1);
                s.send(
                    usize::from(op % 10),
                    channel,
                    crate::fuzz::seeded_message(script.u16()),
                );
            }
            2 => s.tick((f64::from(script.byte().unwrap_or(0)) + 1.0) / 1000.0),
            3 => s.deliver_next(),
            4 => {
                s.in_flight.pop_front();
            }
            5 => {
                if let Some(front) = s.in_flight.front().cloned() {
                    s.in_flight.push_back(front);
                }
            }
            6 => {
                if let Some(front) = s.in_flight.pop_front() {
                    s.in_flight.push_back(front);
                }
            }
            7 => s.deliver_all(),
            8 => {
                let to_server = script.byte().unwrap_or(0) & 1 == 0;
                let bytes = script.blob().to_vec();
                s.deliver(InFlight {
                    to_server,
                    bytes,
                    origin: Origin::Raw,
                    genuine: None,
                });
            }
            _ => {
                let at = script.u16();
                s.alter(0, at);
            }
        }
        s.take_messages();
        s.check_bounds();
    }
    s.drain();
    assert!(
        !s.tampered,
        "a datagram no stack sealed authenticated (forged from the seed's keys?)"
    );
    s.finish()
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` scripts of the two-stack target: seeded sends, ticks and network
    /// faults (drops, duplicates, reordering), raw junk and bit flips (dropped).
    /// Every reliable message the script queues must arrive.
    pub fn two_stacks(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut script = (rng.next_u64() as u16).to_le_bytes().to_vec();
                let mut reliable = 0;
                for _ in 0..8 + rng.below(40) {
                    match rng.below(12) {
                        0..=2 => {
                            let side = rng.below(2) as u8;
                            let channel = rng.below(2) as u8;
                            reliable += usize::from(channel == 0);
                            script.extend_from_slice(&[side, channel]);
                            script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                        }
                        3..=4 => script.extend_from_slice(&[2, rng.below(40) as u8]),
                        5 => script.push(3),
                        6 => script.push(4),
                        7 => script.push(5),
                        8 => script.push(6),
                        9 => {
                            let mut junk = vec![0u8; rng.below(40) as usize];
                            rng.fill_bytes(&mut junk);
                            script.extend_from_slice(&[8, rng.below(2) as u8]);
                            push_blob(&mut script, &junk);
                        }
                        10 => {
                            script.push(9);
                            script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                        }
                        _ => script.push(7),
                    }
                }
                Seed {
                    input: script,
                    taken: None,
                    reliable,
                    sessions: 0,
                    tampered: false,
                }
            })
            .collect()
    }
}
