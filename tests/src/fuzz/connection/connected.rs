//! Target: the connection's receive path from the connected peer.

use super::duo::{InFlight, Origin};
use super::*;

/// Two connected stacks (keys and token from the script's first two bytes). Ops
/// (`op % 10`): `0`/`1` a raw blob to the server / the client; `2`/`3` a blob sealed
/// by the harness as a payload with the session key (offset byte, then the blob: the
/// packet endpoint and the message layer behind the seal are reached); `4`/`5` a
/// sealed keep-alive (index byte) or disconnect (odd byte); `6` tick `n` ms and
/// deliver what is in flight; `7` queue a seeded message (side, channel, `u16`
/// seed); `8` alter the oldest datagram in flight (how byte, `u16`: bit flip,
/// truncation, splice with a delivered datagram, extension); `9` replay a delivered
/// datagram (index byte). Checks: nothing a stack did not seal authenticates (an
/// unauthenticated, altered or replayed datagram is dropped and changes nothing);
/// bounds hold throughout; unless the script sealed a datagram itself, reliable
/// messages arrive in order and complete, unreliable ones at most once; the script
/// run twice gives the same trace. Returns the number of messages delivered.
pub fn connection_connected(data: &[u8]) -> usize {
    connection_connected_outcome(data).delivered
}

/// [`connection_connected`], with everything the run counted.
pub fn connection_connected_outcome(data: &[u8]) -> DuoOutcome {
    let a = run_connected(data);
    let b = run_connected(data);
    assert_eq!(a, b, "the connection is not deterministic");
    a
}

fn run_connected(data: &[u8]) -> DuoOutcome {
    let mut script = Script::new(data);
    let mut s = Duo::connected(u64::from(script.u16()));
    while let Some(op) = script.byte() {
        match op % 10 {
            0 | 1 => {
                let bytes = script.blob().to_vec();
                s.deliver(InFlight {
                    to_server: op % 10 == 0,
                    bytes,
                    origin: Origin::Raw,
                    genuine: None,
                });
            }
            2 | 3 => {
                let offset = script.byte().unwrap_or(0);
                let blob = script.blob();
                s.forge(op % 10 == 2, &Packet::Payload(blob), offset);
            }
            4 | 5 => {
                let b = script.byte().unwrap_or(0);
                let packet = if b & 1 == 1 {
                    Packet::Disconnect
                } else {
                    Packet::KeepAlive {
                        client_index: u32::from(b >> 1),
                        max_clients: 4,
                    }
                };
                s.forge(op % 10 == 4, &packet, 0);
            }
            6 => {
                s.tick(f64::from(script.byte().unwrap_or(0)) / 1000.0);
                s.deliver_all();
            }
            7 => {
                let side = usize::from(script.byte().unwrap_or(0) & 1);
                let channel = usize::from(script.byte().unwrap_or(0) & 1);
                s.send(side, channel, crate::fuzz::seeded_message(script.u16()));
            }
            8 => {
                let how = script.byte().unwrap_or(0);
                s.alter(how, script.u16());
            }
            _ => s.replay(script.byte().unwrap_or(0)),
        }
        s.take_messages();
    }
    s.drain();
    s.finish()
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` scripts of the connected target: seeded sends and ticks; replays of
    /// delivered datagrams and alterations in flight (both dropped without effect);
    /// and, in one script in three, the payloads of a live exchange sealed again by
    /// the harness (which reaches the endpoint and the layer behind the seal, and
    /// marks the script tampered). Every reliable message the script queues must
    /// arrive; the scripts that seal nothing themselves are checked for content.
    pub fn connection_connected(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let key_seed = rng.next_u64() as u16;
                let mut s = Duo::connected(u64::from(key_seed));
                let forging = rng.below(3) == 0;
                let mut script = key_seed.to_le_bytes().to_vec();
                let (mut reliable, mut forged) = (0, false);
                for _ in 0..1 + rng.below(6) {
                    for _ in 0..rng.below(4) {
                        let side = rng.below(2) as u8;
                        let channel = rng.below(2) as u8;
                        let msg_seed = rng.next_u64() as u16;
                        reliable += usize::from(channel == 0);
                        script.extend_from_slice(&[7, side, channel]);
                        script.extend_from_slice(&msg_seed.to_le_bytes());
                    }
                    if rng.below(3) == 0 {
                        script.extend_from_slice(&[8, rng.below(4) as u8]);
                        script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                    }
                    if rng.below(3) == 0 {
                        script.extend_from_slice(&[9, rng.below(32) as u8]);
                    }
                    if forging {
                        // The datagrams of a mirror run, opened, sealed again.
                        for _ in 0..rng.below(3) {
                            let side = rng.below(2) as usize;
                            s.send(
                                side,
                                rng.below(2) as usize,
                                crate::fuzz::seeded_message(rng.next_u64() as u16),
                            );
                        }
                        s.tick(0.05);
                        while let Some(d) = s.in_flight.pop_front() {
                            let dir = usize::from(!d.to_server);
                            let mut copy = d.bytes.clone();
                            let allowed = AllowedPackets::NONE.with(PacketType::Payload);
                            if let Ok((_, Packet::Payload(inner))) = read_packet(
                                &mut copy,
                                s.protocol_id,
                                0,
                                Some(&s.keys[dir]),
                                allowed,
                                None,
                            ) {
                                script.extend_from_slice(&[2 + dir as u8, rng.below(3) as u8]);
                                push_blob(&mut script, inner);
                                forged = true;
                            }
                        }
                    }
                    script.extend_from_slice(&[6, 16 + rng.below(60) as u8]);
                }
                Seed {
                    input: script,
                    taken: None,
                    reliable,
                    sessions: 0,
                    tampered: forged,
                }
            })
            .collect()
    }
}
