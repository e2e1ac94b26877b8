//! The floor a derive must beat: a plain hand-written bit-packer with a 64-bit scratch
//! register, one function per message with the declared widths written out, the
//! reference dequantization formula (a division), and every check a hostile input
//! needs (ranges, indexes, padding, string contents, lengths). Its bytes are netproto's
//! (the benchmark asserts it), so the rows compare the same work.

// Angle ranges are pi and pi/2 rounded up, as in the messages.
#![allow(clippy::approx_constant)]

use netproto::{Quantization, bits_required};
use netproto_examples::game::{
    ChatMessage, EntityBatch, EntityId, EntityState, EntityUpdate, GameMessage, MatchPhase,
    PlayerInput, Position,
};

use super::snapshot::{Anim, EntityRef, SnapChat, SnapEntity, SnapIds, SnapInput, SnapMessage};

/// Packs bits least-significant first into a caller's buffer.
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    scratch: u64,
    bits: u32,
    at: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            scratch: 0,
            bits: 0,
            at: 0,
        }
    }

    /// `value` (no bits above `n`), `n` in 1..=64. Panics past the buffer: the benchmark
    /// sizes it from `MAX_BITS`.
    #[inline(always)]
    pub(crate) fn put(&mut self, value: u64, n: u32) {
        self.scratch |= value << self.bits;
        let total = self.bits + n;
        if total >= 64 {
            self.buf[self.at..self.at + 8].copy_from_slice(&self.scratch.to_le_bytes());
            self.at += 8;
            self.scratch = if self.bits == 0 {
                0
            } else {
                value >> (64 - self.bits)
            };
            self.bits = total - 64;
        } else {
            self.bits = total;
        }
    }

    fn align(&mut self) {
        let pad = (8 - self.bits % 8) % 8;
        if pad > 0 {
            self.put(0, pad);
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.align();
        for &b in bytes {
            self.put(u64::from(b), 8);
        }
    }

    /// Flushes and returns the bytes written.
    pub(crate) fn finish(self) -> usize {
        let tail = self.bits.div_ceil(8) as usize;
        self.buf[self.at..self.at + tail].copy_from_slice(&self.scratch.to_le_bytes()[..tail]);
        self.at + tail
    }
}

/// Reads what [`Writer`] packs, refusing to read past the input.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    scratch: u64,
    bits: u32,
    at: usize,
    left: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            scratch: 0,
            bits: 0,
            at: 0,
            left: buf.len() * 8,
        }
    }

    #[inline(always)]
    fn word(&mut self) -> u64 {
        let at = self.at;
        self.at += 8;
        match self.buf.get(at..at + 8) {
            Some(w) => u64::from_le_bytes(w.try_into().unwrap_or([0; 8])),
            None => {
                let mut w = [0u8; 8];
                let rest = self.buf.get(at..).unwrap_or(&[]);
                w[..rest.len()].copy_from_slice(rest);
                u64::from_le_bytes(w)
            }
        }
    }

    /// The next `n` bits (1..=64), or `None` past the end.
    #[inline(always)]
    pub(crate) fn get(&mut self, n: u32) -> Option<u64> {
        if n as usize > self.left {
            return None;
        }
        self.left -= n as usize;
        let mask = u64::MAX >> (64 - n);
        if n <= self.bits {
            let v = self.scratch & mask;
            self.scratch = if n == 64 { 0 } else { self.scratch >> n };
            self.bits -= n;
            Some(v)
        } else {
            let word = self.word();
            let v = (self.scratch | word << self.bits) & mask;
            let need = n - self.bits;
            self.scratch = if need == 64 { 0 } else { word >> need };
            self.bits = 64 - need;
            Some(v)
        }
    }

    /// A value in `[0, span]` sent in `bits_required(0, span)` bits.
    #[inline(always)]
    fn upto(&mut self, span: u64) -> Option<u64> {
        let n = bits_required(0, span);
        let v = self.get(n)?;
        (v <= span).then_some(v)
    }

    fn align(&mut self) -> Option<()> {
        let pad = self.bits % 8;
        if pad > 0 && self.get(pad)? != 0 {
            return None;
        }
        Some(())
    }

    fn string(&mut self, max: u64) -> Option<String> {
        let len = self.upto(max)? as usize;
        self.align()?;
        if len * 8 > self.left {
            return None;
        }
        let mut bytes = Vec::with_capacity(len);
        for _ in 0..len {
            bytes.push(self.get(8)? as u8);
        }
        if bytes.contains(&0) {
            return None;
        }
        String::from_utf8(bytes).ok()
    }

    pub(crate) fn bytes_read(&self) -> usize {
        (self.buf.len() * 8 - self.left).div_ceil(8)
    }
}

/// Quantizes as the reference writer does.
#[inline(always)]
fn quant(w: &mut Writer<'_>, q: &Quantization, v: f32) {
    assert!(q.contains(v), "workload value out of range");
    w.put(u64::from(q.quantize(v)), q.bits());
}

/// Dequantizes with the reference formula: `q / max_int * delta + min`.
#[inline(always)]
fn dequant(r: &mut Reader<'_>, q: &Quantization) -> Option<f32> {
    let raw = r.upto(u64::from(q.max_int()))?;
    let delta = q.max() - q.min();
    Some((raw as f32 / q.max_int() as f32) * delta + q.min())
}

const ANGLE: Quantization = Quantization::new(-3.1416, 3.1416, 0.001);
const PITCH: Quantization = Quantization::new(-1.5708, 1.5708, 0.001);
const PLANE: Quantization = Quantization::new(-1024.0, 1024.0, 0.01);
const HEIGHT: Quantization = Quantization::new(-64.0, 448.0, 0.01);
const HEADING: Quantization = Quantization::new(-3.1416, 3.1416, 0.01);

/// One game message.
pub(crate) fn write_game(w: &mut Writer<'_>, m: &GameMessage) {
    match m {
        GameMessage::Input(m) => {
            w.put(0, 3);
            w.put(u64::from(m.tick), 6);
            w.put(u64::from(m.buttons), 8);
            quant(w, &ANGLE, m.aim_yaw);
            quant(w, &PITCH, m.aim_pitch);
            w.put((m.move_x + 7) as u64, 4);
            w.put((m.move_y + 7) as u64, 4);
        }
        GameMessage::Update(m) => {
            w.put(1, 3);
            w.put(u64::from(m.entity.0), 12);
            quant(w, &PLANE, m.position.x);
            quant(w, &PLANE, m.position.y);
            quant(w, &HEIGHT, m.position.z);
            quant(w, &HEADING, m.heading);
            w.put(u64::from(m.health), 7);
            match m.state {
                EntityState::Idle => w.put(0, 2),
                EntityState::Moving { speed } => {
                    w.put(1, 2);
                    w.put(u64::from(speed), 4);
                }
                EntityState::Attacking { target } => {
                    w.put(2, 2);
                    w.put(u64::from(target.0), 12);
                }
                EntityState::Dead { respawn_ticks } => {
                    w.put(3, 2);
                    w.put(u64::from(respawn_ticks), 9);
                }
            }
        }
        GameMessage::Chat(m) => {
            w.put(2, 3);
            w.put(u64::from(m.from), 6);
            w.put(m.text.len() as u64, 8);
            w.bytes(m.text.as_bytes());
        }
        GameMessage::Batch(m) => {
            w.put(3, 3);
            w.put(m.ids.len() as u64, 7);
            for id in &m.ids {
                w.put(u64::from(id.0), 12);
            }
        }
        GameMessage::Phase(m) => {
            w.put(4, 3);
            match m {
                MatchPhase::Warmup { players } => {
                    w.put(0, 2);
                    w.put(u64::from(*players), 7);
                }
                MatchPhase::Countdown { seconds } => {
                    w.put(1, 2);
                    w.put(u64::from(*seconds), 4);
                }
                MatchPhase::Playing { round, red, blue } => {
                    w.put(2, 2);
                    w.put(u64::from(*round - 1), 5);
                    w.put(u64::from(*red), 10);
                    w.put(u64::from(*blue), 10);
                }
                MatchPhase::RoundOver { winner } => {
                    w.put(3, 2);
                    w.put(u64::from(winner.is_some()), 1);
                    if let Some(team) = winner {
                        w.put(u64::from(*team), 1);
                    }
                }
            }
        }
    }
}

/// One game message, or `None` for bad input.
pub(crate) fn read_game(r: &mut Reader<'_>) -> Option<GameMessage> {
    Some(match r.upto(4)? {
        0 => GameMessage::Input(PlayerInput {
            tick: r.get(6)? as u8,
            buttons: r.get(8)? as u8,
            aim_yaw: dequant(r, &ANGLE)?,
            aim_pitch: dequant(r, &PITCH)?,
            move_x: r.upto(14)? as i8 - 7,
            move_y: r.upto(14)? as i8 - 7,
        }),
        1 => GameMessage::Update(EntityUpdate {
            entity: EntityId(r.get(12)? as u16),
            position: Position {
                x: dequant(r, &PLANE)?,
                y: dequant(r, &PLANE)?,
                z: dequant(r, &HEIGHT)?,
            },
            heading: dequant(r, &HEADING)?,
            health: r.upto(100)? as u8,
            state: match r.get(2)? {
                0 => EntityState::Idle,
                1 => EntityState::Moving {
                    speed: r.get(4)? as u8,
                },
                2 => EntityState::Attacking {
                    target: EntityId(r.get(12)? as u16),
                },
                _ => EntityState::Dead {
                    respawn_ticks: r.upto(300)? as u16,
                },
            },
        }),
        2 => GameMessage::Chat(ChatMessage {
            from: r.get(6)? as u8,
            text: r.string(140)?,
        }),
        3 => {
            let len = r.upto(64)? as usize;
            let mut ids = Vec::with_capacity(len);
            for _ in 0..len {
                ids.push(EntityId(r.get(12)? as u16));
            }
            GameMessage::Batch(EntityBatch { ids })
        }
        _ => GameMessage::Phase(match r.get(2)? {
            0 => MatchPhase::Warmup {
                players: r.upto(64)? as u8,
            },
            1 => MatchPhase::Countdown {
                seconds: r.upto(10)? as u8,
            },
            2 => MatchPhase::Playing {
                round: r.upto(29)? as u8 + 1,
                red: r.upto(999)? as u16,
                blue: r.upto(999)? as u16,
            },
            _ => MatchPhase::RoundOver {
                winner: if r.get(1)? == 1 {
                    Some(r.get(1)? == 1)
                } else {
                    None
                },
            },
        }),
    })
}

const WIDE: Quantization = Quantization::new(-2048.0, 2048.0, 0.01);
const DEPTH: Quantization = Quantization::new(-256.0, 768.0, 0.01);
const SPEED: Quantization = Quantization::new(0.0, 64.0, 0.01);
const YAW: Quantization = Quantization::new(-3.1416, 3.1416, 0.0005);
const TILT: Quantization = Quantization::new(-1.5708, 1.5708, 0.0005);

/// One snapshot-set message.
pub(crate) fn write_snap(w: &mut Writer<'_>, m: &SnapMessage) {
    match m {
        SnapMessage::Entity(m) => {
            w.put(0, 2);
            w.put(u64::from(m.id.0), 14);
            quant(w, &WIDE, m.x);
            quant(w, &WIDE, m.y);
            quant(w, &DEPTH, m.z);
            quant(w, &SPEED, m.speed);
            w.put(u64::from(m.yaw), 16);
            w.put(m.anim.clone() as u64, 3);
        }
        SnapMessage::Input(m) => {
            w.put(1, 2);
            w.put(u64::from(m.tick), 32);
            w.put(u64::from(m.buttons), 10);
            quant(w, &YAW, m.yaw);
            quant(w, &TILT, m.pitch);
        }
        SnapMessage::Chat(m) => {
            w.put(2, 2);
            w.put(u64::from(m.from), 6);
            w.put(m.text.len() as u64, 7);
            w.bytes(m.text.as_bytes());
        }
        SnapMessage::Ids(m) => {
            w.put(3, 2);
            w.put(m.ids.len() as u64, 6);
            for id in &m.ids {
                w.put(u64::from(id.0), 14);
            }
        }
    }
}

/// One snapshot-set message, or `None` for bad input.
pub(crate) fn read_snap(r: &mut Reader<'_>) -> Option<SnapMessage> {
    Some(match r.get(2)? {
        0 => SnapMessage::Entity(SnapEntity {
            id: EntityRef(r.get(14)? as u16),
            x: dequant(r, &WIDE)?,
            y: dequant(r, &WIDE)?,
            z: dequant(r, &DEPTH)?,
            speed: dequant(r, &SPEED)?,
            yaw: r.get(16)? as u16,
            anim: match r.upto(5)? {
                0 => Anim::Idle,
                1 => Anim::Walk,
                2 => Anim::Run,
                3 => Anim::Jump,
                4 => Anim::Fall,
                _ => Anim::Attack,
            },
        }),
        1 => SnapMessage::Input(SnapInput {
            tick: r.get(32)? as u32,
            buttons: r.get(10)? as u16,
            yaw: dequant(r, &YAW)?,
            pitch: dequant(r, &TILT)?,
        }),
        2 => SnapMessage::Chat(SnapChat {
            from: r.get(6)? as u8,
            text: r.string(96)?,
        }),
        _ => {
            let len = r.upto(32)? as usize;
            let mut ids = Vec::with_capacity(len);
            for _ in 0..len {
                ids.push(EntityRef(r.get(14)? as u16));
            }
            SnapMessage::Ids(SnapIds { ids })
        }
    })
}
