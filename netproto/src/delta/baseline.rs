//! Delta snapshots over acked baselines: which snapshot a delta is written against, and
//! how the receiver finds it.
//!
//! Sans-IO. The sender side, [`SnapshotSender`], is **per client**: it keeps a ring of
//! the last `RING` snapshots it sent to that client (the client's own view: a subset of
//! the entities, for interest management), each with the sequence of the packet that
//! carried it and whether that packet was acked. The caller feeds both facts in
//! ([`SnapshotSender::sent_in`], [`SnapshotSender::packet_acked`]; over the UDP
//! transports, which hide packets, the receipts of the tracked messages that carried
//! the snapshots: [`SnapshotSender::sent_with`], [`SnapshotSender::receipt_acked`],
//! see [`UdpServer::send_tracked`](crate::transport::UdpServer::send_tracked)); the baseline of the
//! next snapshot is the newest one whose own carrying packet was acked (acks are per
//! snapshot sent, never per group), or none, and then the snapshot goes out full.
//!
//! The receiver side, [`SnapshotReceiver`], keeps a ring of the last `RING` snapshots
//! it applied, so it resolves whichever of them a delta names, not only the latest.
//! A delta whose baseline it does not hold is refused and counted, never guessed; a
//! snapshot not newer than the newest applied is dropped and counted.
//!
//! # Header
//!
//! `sequence` (16 bits, wrapping), one bit `delta`, and for a delta `sequence -
//! baseline - 1` in `log2(RING)` bits (the baseline is at most `RING - 1` snapshots
//! older). With the default ring of 32: 17 bits for a full snapshot, 22 for a delta.
//! Then the snapshot's full form ([`NetMessage`](crate::NetMessage)) or its delta form ([`NetDelta`]).
//!
//! # Why a delta is never applied to a wrong baseline
//!
//! Correctness does not depend on the acks: they only choose *which* baseline. The
//! receiver applies a delta only to the snapshot it holds under the exact sequence the
//! header names, and it holds only snapshots within the last `RING` sequences of the
//! newest it applied (older slots are invalidated as the window moves, so a 16-bit
//! sequence that wrapped around never names a stale slot). The sender numbers its
//! snapshots without gaps and never reuses a number, so one sequence names one state on
//! both ends. A wrong or late ack costs bandwidth (a refused delta, a full snapshot),
//! never correctness.
//!
//! # Resync and reconnect
//!
//! [`SnapshotSender::resync`] forgets every baseline: no snapshot sent before it is ever
//! a baseline again, and snapshots go out full until one sent after it is acked
//! ([`SnapshotReceiver::resync`] likewise forgets every held snapshot; deltas against
//! them are then refused). A reconnect makes a new sender and a new receiver.
//!
//! ```
//! use netproto::NetMessage;
//! use netproto::delta::{SnapshotReceiver, SnapshotSender};
//! use netproto::packet::Sequence;
//!
//! #[derive(NetMessage, Clone, Debug, PartialEq)]
//! #[net(delta)]
//! struct World {
//!     #[net(range = 0..=1000, delta = -15..=15)]
//!     x: u16,
//! }
//!
//! let mut sender = SnapshotSender::<World>::new(0);
//! let mut receiver = SnapshotReceiver::<World>::new();
//! let mut buf = [0u8; 16];
//!
//! // Nothing acked yet: full.
//! let sent = sender.encode_into(&World { x: 500 }, &mut buf).unwrap();
//! assert_eq!(sent.baseline, None);
//! receiver.receive(&buf[..sent.bytes]).unwrap();
//! sender.sent_in(sent.sequence, Sequence(7)); // it rode packet 7...
//! sender.packet_acked(Sequence(7)); // ...which the client acked.
//!
//! let sent = sender.encode_into(&World { x: 503 }, &mut buf).unwrap();
//! assert_eq!(sent.baseline, Some(0));
//! let applied = receiver.receive(&buf[..sent.bytes]).unwrap();
//! assert_eq!(applied.baseline, Some(0));
//! assert_eq!(receiver.latest(), Some((1, &World { x: 503 })));
//! ```

use core::fmt;

use super::NetDelta;
use crate::error::{ErrorKind, StreamError};
use crate::sequence::{Receipt, Sequence};
use crate::stream::{ReadStream, Stream, WriteStream};

/// The default ring size: 32 snapshots (half a second at 60 Hz, 1.6 s at 20 Hz).
pub const DEFAULT_RING: usize = 32;

/// Whether sequence `a` is newer than `b` (wrapping: within half the space ahead).
#[inline]
fn newer(a: u16, b: u16) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000
}

/// Ring index of a sequence.
#[inline]
fn slot_of<const RING: usize>(sequence: u16) -> usize {
    usize::from(sequence) % RING
}

/// Bits of the baseline offset for a ring of `RING` snapshots, checked at compile time:
/// `RING` must be a power of two in `2..=256`.
const fn offset_bits<const RING: usize>() -> u32 {
    assert!(
        RING.is_power_of_two() && RING >= 2 && RING <= 256,
        "the snapshot ring size must be a power of two in 2..=256"
    );
    RING.trailing_zeros()
}

/// The header of a snapshot on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// The snapshot's sequence.
    pub sequence: u16,
    /// The sequence of the snapshot it is a delta against; `None`: sent full.
    pub baseline: Option<u16>,
}

impl SnapshotHeader {
    /// Bits of the header for a ring of `RING`: 17 for a full snapshot, `17 +
    /// log2(RING)` for a delta.
    pub const fn bits<const RING: usize>(delta: bool) -> usize {
        17 + if delta {
            offset_bits::<RING>() as usize
        } else {
            0
        }
    }

    /// Writes, reads or measures the header for a ring of `RING`. A reader fills `self`;
    /// a writer rejects a baseline not `1..RING` snapshots older than the sequence with
    /// [`ErrorKind::OutOfRange`].
    pub fn serialize<const RING: usize, S: Stream>(
        &mut self,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let bits = const { offset_bits::<RING>() };
        let mut sequence = u64::from(self.sequence);
        stream.serialize_bits(&mut sequence, 16)?;
        let mut delta = self.baseline.is_some();
        stream.serialize_bool(&mut delta)?;
        let mut offset = 0u64;
        if let (false, Some(baseline)) = (S::IS_READING, self.baseline) {
            let back = usize::from(self.sequence.wrapping_sub(baseline));
            stream.check((1..RING).contains(&back), ErrorKind::OutOfRange)?;
            offset = back.saturating_sub(1) as u64;
        }
        if delta {
            stream.serialize_bits(&mut offset, bits)?;
        }
        if S::IS_READING {
            // `sequence` is 16 bits and `offset + 1 < RING <= 256`: both fit.
            self.sequence = sequence as u16;
            self.baseline = delta.then(|| self.sequence.wrapping_sub(offset as u16 + 1));
        }
        Ok(())
    }
}

/// What [`SnapshotSender::encode_into`] sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentSnapshot {
    /// The snapshot's sequence: tell the sender which packet carries it
    /// ([`SnapshotSender::sent_in`]).
    pub sequence: u16,
    /// Its baseline; `None`: full.
    pub baseline: Option<u16>,
    /// Bytes written (header included).
    pub bytes: usize,
}

/// The sender's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SenderStats {
    /// Snapshots sent full (no acked baseline).
    pub full: u64,
    /// Snapshots sent as a delta.
    pub delta: u64,
    /// Acks that marked a snapshot acked.
    pub snapshots_acked: u64,
    /// Acks of packets that carried no snapshot still in the ring.
    pub acks_ignored: u64,
    /// Calls to [`SnapshotSender::resync`].
    pub resyncs: u64,
}

/// What carried a sent snapshot: a packet, or a tracked message.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Carrier {
    Packet(Sequence),
    Receipt(Receipt),
}

struct SentSlot<T> {
    sequence: u16,
    /// Holds a snapshot that may still become a baseline.
    live: bool,
    packet: Option<Carrier>,
    acked: bool,
    state: T,
}

/// The sending side of delta snapshots for **one** client: a ring of the last `RING`
/// snapshots sent to it, and which of them the client acked (see the
/// [module](crate::delta::baseline)).
///
/// Allocates its ring once, in [`SnapshotSender::new`]; a snapshot is copied into its
/// slot with `clone_from`, which reuses the slot's allocations, so a steady state
/// allocates nothing.
///
/// The loop of the guide's "Delta snapshots over acked baselines":
///
/// ```
/// # use netproto::NetMessage;
/// use netproto::delta::{SnapshotReceiver, SnapshotSender};
/// use netproto::packet::Sequence;
/// # #[derive(NetMessage, Clone, Debug, PartialEq)]
/// # #[net(delta)]
/// # struct View { #[net(range = 0..=1000, delta = -15..=15)] x: u16 }
/// let mut sender = SnapshotSender::<View>::new(0); // per client, ring of 32
/// let mut receiver = SnapshotReceiver::<View>::new(); // on that client
/// let mut buf = [0u8; 64];
/// for (tick, x) in [500u16, 503, 509].into_iter().enumerate() {
///     let sent = sender.encode_into(&View { x }, &mut buf)?; // full, or delta vs baseline
///     let packet = Sequence(tick as u16); // the packet layer's sequence for this packet
///     sender.sent_in(sent.sequence, packet);
///     receiver.receive(&buf[..sent.bytes]).expect("in order, no loss here");
///     sender.packet_acked(packet); // when the packet layer reports the ack
/// }
/// assert_eq!(receiver.latest(), Some((2, &View { x: 509 })));
/// assert_eq!(sender.stats().full, 1);
/// # Ok::<(), netproto::StreamError>(())
/// ```
pub struct SnapshotSender<T, const RING: usize = DEFAULT_RING> {
    slots: Box<[SentSlot<T>]>,
    next: u16,
    stats: SenderStats,
}

impl<T: NetDelta, const RING: usize> SnapshotSender<T, RING> {
    /// A sender whose first snapshot has sequence `first`.
    pub fn new(first: u16) -> Self {
        let _ = const { offset_bits::<RING>() };
        Self {
            slots: (0..RING)
                .map(|_| SentSlot {
                    sequence: 0,
                    live: false,
                    packet: None,
                    acked: false,
                    state: T::blank(),
                })
                .collect(),
            next: first,
            stats: SenderStats::default(),
        }
    }

    /// Gives every ring slot room for a snapshot as large as `largest` (its clone, not
    /// live: never a baseline), so that no tick allocates, even the first ones. Without
    /// it a slot grows the first few times it holds a larger snapshot than before.
    pub fn preallocate(&mut self, largest: &T) {
        for slot in self.slots.iter_mut().filter(|slot| !slot.live) {
            slot.state.clone_from(largest);
        }
    }

    /// The sequence the next snapshot gets.
    pub fn next_sequence(&self) -> u16 {
        self.next
    }

    /// The counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// The baseline the next snapshot would be written against: the newest snapshot of
    /// the last `RING - 1` whose carrying packet was acked, sent since the last
    /// [`resync`](Self::resync).
    pub fn baseline(&self) -> Option<u16> {
        (1..RING).find_map(|back| {
            // `back < RING <= 256`.
            let sequence = self.next.wrapping_sub(back as u16);
            let slot = &self.slots[slot_of::<RING>(sequence)];
            (slot.live && slot.acked && slot.sequence == sequence).then_some(sequence)
        })
    }

    /// The snapshot sent under `sequence`, while the ring holds it.
    pub fn get(&self, sequence: u16) -> Option<&T> {
        let slot = &self.slots[slot_of::<RING>(sequence)];
        (slot.live && slot.sequence == sequence).then_some(&slot.state)
    }

    /// Writes the header and `state` (a delta against [`baseline`](Self::baseline), or
    /// full) into `buf`, keeps a copy in the ring and takes the next sequence.
    ///
    /// On error (`buf` too small, a field out of its range) nothing changes: the
    /// sequence is not taken.
    pub fn encode_into(&mut self, state: &T, buf: &mut [u8]) -> Result<SentSnapshot, StreamError> {
        let sequence = self.next;
        let baseline = self.baseline();
        let mut stream = WriteStream::new(buf);
        let mut header = SnapshotHeader { sequence, baseline };
        header.serialize::<RING, _>(&mut stream)?;
        match baseline {
            Some(base) => {
                let base = &self.slots[slot_of::<RING>(base)].state;
                state.write_delta(base, &mut stream)?;
            }
            None => state.write(&mut stream)?,
        }
        let bytes = stream.finish();
        // The baseline is 1..RING back: never the slot written here.
        let slot = &mut self.slots[slot_of::<RING>(sequence)];
        slot.state.clone_from(state);
        slot.sequence = sequence;
        slot.live = true;
        slot.packet = None;
        slot.acked = false;
        self.next = sequence.wrapping_add(1);
        match baseline {
            Some(_) => self.stats.delta += 1,
            None => self.stats.full += 1,
        }
        Ok(SentSnapshot {
            sequence,
            baseline,
            bytes,
        })
    }

    /// Records that packet `packet` carried snapshot `snapshot`. Returns false when the
    /// ring no longer holds that snapshot (nothing recorded).
    ///
    /// One carrier per snapshot: a second call for the same snapshot (or a
    /// [`sent_with`](Self::sent_with)) replaces the first.
    pub fn sent_in(&mut self, snapshot: u16, packet: Sequence) -> bool {
        self.carried_by(snapshot, Carrier::Packet(packet))
    }

    /// Records that the tracked message of `receipt` carried snapshot `snapshot` (sent
    /// with [`send_tracked`](crate::transport::UdpServer::send_tracked) on an
    /// unreliable channel): the way to feed the sender over the transports, which
    /// hide packets. Returns false when the ring no longer holds that snapshot.
    pub fn sent_with(&mut self, snapshot: u16, receipt: Receipt) -> bool {
        self.carried_by(snapshot, Carrier::Receipt(receipt))
    }

    fn carried_by(&mut self, snapshot: u16, carrier: Carrier) -> bool {
        let slot = &mut self.slots[slot_of::<RING>(snapshot)];
        if !(slot.live && slot.sequence == snapshot) {
            return false;
        }
        slot.packet = Some(carrier);
        true
    }

    /// Records that the client acked packet `packet`: the snapshot that packet carried
    /// (if the ring still holds it) becomes a candidate baseline. Returns its sequence.
    pub fn packet_acked(&mut self, packet: Sequence) -> Option<u16> {
        self.carrier_acked(Carrier::Packet(packet))
    }

    /// Records that the message of `receipt` reached the client
    /// ([`poll_receipt`](crate::transport::UdpServer::poll_receipt)): the snapshot it
    /// carried (if the ring still holds it) becomes a candidate baseline. Returns its
    /// sequence.
    pub fn receipt_acked(&mut self, receipt: Receipt) -> Option<u16> {
        self.carrier_acked(Carrier::Receipt(receipt))
    }

    fn carrier_acked(&mut self, carrier: Carrier) -> Option<u16> {
        let found = self
            .slots
            .iter_mut()
            .find(|slot| slot.live && slot.packet == Some(carrier));
        match found {
            Some(slot) => {
                slot.acked = true;
                // An ack is used once: a later packet (or receipt) with the same
                // 16-bit number does not ack this snapshot again.
                slot.packet = None;
                self.stats.snapshots_acked += 1;
                Some(slot.sequence)
            }
            None => {
                self.stats.acks_ignored += 1;
                None
            }
        }
    }

    /// Records that packet `packet` was lost (the packet layer gave up on it): the
    /// snapshot it carried never becomes a baseline through it.
    pub fn packet_lost(&mut self, packet: Sequence) {
        for slot in self.slots.iter_mut() {
            if slot.packet == Some(Carrier::Packet(packet)) {
                slot.packet = None;
            }
        }
    }

    /// Forgets every baseline: no snapshot sent before this call is ever a baseline
    /// again, and snapshots go out full until one sent after it is acked. Call it when
    /// the client's state was reset out of band (a resync, a level change, a request
    /// from a receiver that refuses deltas). Sequences continue.
    pub fn resync(&mut self) {
        for slot in self.slots.iter_mut() {
            slot.live = false;
            slot.packet = None;
            slot.acked = false;
        }
        self.stats.resyncs += 1;
    }
}

impl<T, const RING: usize> fmt::Debug for SnapshotSender<T, RING> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotSender")
            .field("ring", &RING)
            .field("next", &self.next)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// What [`SnapshotReceiver::receive`] applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppliedSnapshot {
    /// The snapshot's sequence (now [`SnapshotReceiver::latest`]).
    pub sequence: u16,
    /// The baseline it was a delta against; `None`: it came full.
    pub baseline: Option<u16>,
}

/// Why [`SnapshotReceiver::receive`] refused a snapshot. Nothing changed in the
/// receiver but a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotRefused {
    /// Not newer than the newest snapshot applied (late, reordered or duplicated).
    Stale {
        /// The snapshot's sequence.
        sequence: u16,
    },
    /// A delta against a snapshot the receiver does not hold (never received, dropped,
    /// out of the ring, or forgotten by a resync).
    MissingBaseline {
        /// The snapshot's sequence.
        sequence: u16,
        /// The baseline it named.
        baseline: u16,
    },
    /// The bytes do not decode (truncated, a value out of its range, trailing bytes).
    Malformed(StreamError),
}

impl fmt::Display for SnapshotRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stale { sequence } => write!(f, "snapshot {sequence} is not newer"),
            Self::MissingBaseline { sequence, baseline } => {
                write!(f, "snapshot {sequence}: baseline {baseline} not held")
            }
            Self::Malformed(e) => write!(f, "malformed snapshot: {e}"),
        }
    }
}

impl core::error::Error for SnapshotRefused {}

/// The receiver's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReceiverStats {
    /// Full snapshots applied.
    pub applied_full: u64,
    /// Deltas applied.
    pub applied_delta: u64,
    /// Snapshots dropped as not newer than the newest applied (duplicates included).
    pub stale: u64,
    /// Deltas refused: baseline not held.
    pub missing_baseline: u64,
    /// Snapshots that did not decode.
    pub malformed: u64,
}

struct ReceivedSlot<T> {
    sequence: u16,
    live: bool,
    state: T,
}

/// The receiving side of delta snapshots: a ring of the last `RING` snapshots applied,
/// so that a delta against any of them resolves (see the [module](crate::delta::baseline)).
///
/// Allocates its ring once, in [`SnapshotReceiver::new`]; a snapshot is decoded into a
/// scratch value that then trades places with its ring slot, so a steady state
/// allocates nothing, and a snapshot that fails to decode changes nothing.
pub struct SnapshotReceiver<T, const RING: usize = DEFAULT_RING> {
    slots: Box<[ReceivedSlot<T>]>,
    scratch: T,
    newest: Option<u16>,
    stats: ReceiverStats,
}

impl<T: NetDelta, const RING: usize> Default for SnapshotReceiver<T, RING> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: NetDelta, const RING: usize> SnapshotReceiver<T, RING> {
    /// An empty receiver.
    pub fn new() -> Self {
        let _ = const { offset_bits::<RING>() };
        Self {
            slots: (0..RING)
                .map(|_| ReceivedSlot {
                    sequence: 0,
                    live: false,
                    state: T::blank(),
                })
                .collect(),
            scratch: T::blank(),
            newest: None,
            stats: ReceiverStats::default(),
        }
    }

    /// Gives every ring slot and the scratch value room for a snapshot as large as
    /// `largest` (clones, not live: never a baseline), so that no snapshot received
    /// allocates, even the first ones.
    pub fn preallocate(&mut self, largest: &T) {
        for slot in self.slots.iter_mut().filter(|slot| !slot.live) {
            slot.state.clone_from(largest);
        }
        self.scratch.clone_from(largest);
    }

    /// The counters.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }

    /// The newest snapshot applied, with its sequence (`None` before the first, or after
    /// a [`resync`](Self::resync)).
    pub fn latest(&self) -> Option<(u16, &T)> {
        let sequence = self.newest?;
        self.get(sequence).map(|state| (sequence, state))
    }

    /// The snapshot applied under `sequence`, while the ring holds it.
    pub fn get(&self, sequence: u16) -> Option<&T> {
        let slot = &self.slots[slot_of::<RING>(sequence)];
        (slot.live && slot.sequence == sequence).then_some(&slot.state)
    }

    /// Reads one snapshot (header and body, exactly `bytes`), resolves its baseline in
    /// the ring and applies it: it becomes [`latest`](Self::latest).
    ///
    /// Refuses (and counts) a snapshot not newer than the newest applied, a delta whose
    /// baseline is not held, and bytes that do not decode; a refusal changes nothing
    /// else. Never panics.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<AppliedSnapshot, SnapshotRefused> {
        let result = self.decode(bytes);
        match result {
            Ok(AppliedSnapshot { baseline: None, .. }) => self.stats.applied_full += 1,
            Ok(_) => self.stats.applied_delta += 1,
            Err(SnapshotRefused::Stale { .. }) => self.stats.stale += 1,
            Err(SnapshotRefused::MissingBaseline { .. }) => self.stats.missing_baseline += 1,
            Err(SnapshotRefused::Malformed(_)) => self.stats.malformed += 1,
        }
        result
    }

    fn decode(&mut self, bytes: &[u8]) -> Result<AppliedSnapshot, SnapshotRefused> {
        let mut stream = ReadStream::new(bytes);
        let mut header = SnapshotHeader {
            sequence: 0,
            baseline: None,
        };
        header
            .serialize::<RING, _>(&mut stream)
            .map_err(SnapshotRefused::Malformed)?;
        let sequence = header.sequence;
        if let Some(newest) = self.newest
            && !newer(sequence, newest)
        {
            return Err(SnapshotRefused::Stale { sequence });
        }
        match header.baseline {
            Some(baseline) => {
                let slot = &self.slots[slot_of::<RING>(baseline)];
                if !(slot.live && slot.sequence == baseline) {
                    return Err(SnapshotRefused::MissingBaseline { sequence, baseline });
                }
                self.scratch
                    .read_delta(&slot.state, &mut stream)
                    .map_err(SnapshotRefused::Malformed)?;
            }
            None => self
                .scratch
                .serialize(&mut stream)
                .map_err(SnapshotRefused::Malformed)?,
        }
        if stream.bytes_read() != bytes.len() {
            return Err(SnapshotRefused::Malformed(StreamError::new(
                ErrorKind::TrailingBytes,
            )));
        }
        self.advance(sequence);
        let slot = &mut self.slots[slot_of::<RING>(sequence)];
        core::mem::swap(&mut slot.state, &mut self.scratch);
        slot.sequence = sequence;
        slot.live = true;
        self.newest = Some(sequence);
        Ok(AppliedSnapshot {
            sequence,
            baseline: header.baseline,
        })
    }

    /// Moves the window to end at `sequence` (newer than `newest`): the slots of the
    /// sequences skipped on the way, and everything once the jump is a ring or more,
    /// no longer hold a snapshot of the window.
    fn advance(&mut self, sequence: u16) {
        let Some(newest) = self.newest else {
            return;
        };
        let jump = usize::from(sequence.wrapping_sub(newest));
        if jump >= RING {
            for slot in self.slots.iter_mut() {
                slot.live = false;
            }
        } else {
            for back in 1..jump {
                // `back < RING <= 256`.
                let skipped = newest.wrapping_add(back as u16);
                self.slots[slot_of::<RING>(skipped)].live = false;
            }
        }
    }

    /// Forgets every snapshot held: deltas against them are refused from now on, until
    /// a full snapshot arrives. The newest sequence applied is kept (older snapshots
    /// are still dropped as stale).
    pub fn resync(&mut self) {
        for slot in self.slots.iter_mut() {
            slot.live = false;
        }
    }
}

impl<T, const RING: usize> fmt::Debug for SnapshotReceiver<T, RING> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotReceiver")
            .field("ring", &RING)
            .field("newest", &self.newest)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_and_packets_are_separate_carriers() {
        let mut sender = SnapshotSender::<u16, 4>::new(0);
        let mut buf = [0u8; 8];
        let a = sender.encode_into(&5, &mut buf).unwrap().sequence;
        let b = sender.encode_into(&6, &mut buf).unwrap().sequence;
        assert!(sender.sent_with(a, Receipt(7)));
        assert!(sender.sent_in(b, Sequence(7)));
        // Packet 7 is not receipt 7: only b.
        assert_eq!(sender.packet_acked(Sequence(7)), Some(b));
        assert_eq!(sender.baseline(), Some(b));
        assert_eq!(sender.receipt_acked(Receipt(7)), Some(a));
        // Used once.
        assert_eq!(sender.receipt_acked(Receipt(7)), None);
        assert_eq!(sender.stats().acks_ignored, 1);
        // A snapshot the ring dropped takes no carrier.
        for x in 0..4 {
            sender.encode_into(&x, &mut buf).unwrap();
        }
        assert!(!sender.sent_with(a, Receipt(8)));
    }

    #[test]
    fn header_round_trips_and_costs_its_bits() {
        for (sequence, baseline) in [
            (0u16, None),
            (0, Some(65535)),
            (5, Some(65530)),
            (65535, Some(65504)),
            (300, Some(299)),
        ] {
            let mut buf = [0u8; 4];
            let mut w = WriteStream::new(&mut buf);
            let mut h = SnapshotHeader { sequence, baseline };
            h.serialize::<32, _>(&mut w).unwrap();
            assert_eq!(
                w.bits_processed(),
                SnapshotHeader::bits::<32>(baseline.is_some())
            );
            let n = w.finish();
            let mut r = ReadStream::new(&buf[..n]);
            let mut back = SnapshotHeader {
                sequence: 1,
                baseline: Some(1),
            };
            back.serialize::<32, _>(&mut r).unwrap();
            assert_eq!(back, SnapshotHeader { sequence, baseline });
        }
    }

    #[test]
    fn header_rejects_a_baseline_outside_the_ring() {
        for baseline in [10u16, 11, 10u16.wrapping_sub(32), 10u16.wrapping_sub(40)] {
            let mut buf = [0u8; 4];
            let mut w = WriteStream::new(&mut buf);
            let mut h = SnapshotHeader {
                sequence: 10,
                baseline: Some(baseline),
            };
            let err = h.serialize::<32, _>(&mut w).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::OutOfRange, "baseline {baseline}");
        }
    }

    type Tx = SnapshotSender<u32, 8>;
    type Rx = SnapshotReceiver<u32, 8>;

    /// Encodes `value` and returns the bytes and what was sent.
    fn send(tx: &mut Tx, value: u32) -> (Vec<u8>, SentSnapshot) {
        let mut buf = [0u8; 16];
        let sent = tx.encode_into(&value, &mut buf).unwrap();
        (buf[..sent.bytes].to_vec(), sent)
    }

    #[test]
    fn full_until_acked_then_the_newest_acked_snapshot() {
        let mut tx = Tx::new(100);
        let mut rx = Rx::new();
        for (i, packet) in [10u16, 11, 12].into_iter().enumerate() {
            let (bytes, sent) = send(&mut tx, 1000 + i as u32);
            assert_eq!(sent.baseline, None);
            assert_eq!(bytes.len(), 7); // 17 bits of header + 32 of value
            assert!(tx.sent_in(sent.sequence, Sequence(packet)));
            rx.receive(&bytes).unwrap();
        }
        // An ack of a packet that carried no snapshot marks nothing.
        assert_eq!(tx.packet_acked(Sequence(9)), None);
        assert_eq!(tx.baseline(), None);
        // Only the packet that carried 102 is acked: 102, not a group up to it.
        assert_eq!(tx.packet_acked(Sequence(12)), Some(102));
        assert_eq!(tx.baseline(), Some(102));
        // A late ack of an older one does not move the baseline back.
        assert_eq!(tx.packet_acked(Sequence(10)), Some(100));
        assert_eq!(tx.baseline(), Some(102));
        // The same 16-bit packet sequence acked again marks nothing more.
        assert_eq!(tx.packet_acked(Sequence(10)), None);
        let (bytes, sent) = send(&mut tx, 1003);
        assert_eq!(sent.baseline, Some(102));
        let applied = rx.receive(&bytes).unwrap();
        assert_eq!(
            applied,
            AppliedSnapshot {
                sequence: 103,
                baseline: Some(102)
            }
        );
        assert_eq!(rx.latest(), Some((103, &1003)));
        assert_eq!(tx.stats().full, 3);
        assert_eq!(tx.stats().delta, 1);
        assert_eq!(tx.stats().snapshots_acked, 2);
        assert_eq!(tx.stats().acks_ignored, 2);
    }

    #[test]
    fn the_ring_resolves_an_older_baseline_than_the_latest() {
        let mut tx = Tx::new(0);
        let mut rx = Rx::new();
        for v in 0..6u32 {
            let (bytes, sent) = send(&mut tx, v * 10);
            tx.sent_in(sent.sequence, Sequence(sent.sequence));
            rx.receive(&bytes).unwrap();
        }
        // Only snapshot 1's packet was acked: the receiver holds 5 as latest, and 1.
        tx.packet_acked(Sequence(1));
        let (bytes, sent) = send(&mut tx, 77);
        assert_eq!(sent.baseline, Some(1));
        assert_eq!(
            rx.receive(&bytes),
            Ok(AppliedSnapshot {
                sequence: 6,
                baseline: Some(1)
            })
        );
        assert_eq!(rx.latest(), Some((6, &77)));
        assert_eq!(rx.get(1), Some(&10));
    }

    #[test]
    fn a_delta_against_a_snapshot_not_held_is_refused_and_changes_nothing() {
        let mut tx = Tx::new(0);
        let mut rx = Rx::new();
        let (first, sent) = send(&mut tx, 1);
        tx.sent_in(sent.sequence, Sequence(0));
        tx.packet_acked(Sequence(0));
        // The receiver never got snapshot 0.
        let (bytes, sent) = send(&mut tx, 2);
        assert_eq!(sent.baseline, Some(0));
        assert_eq!(
            rx.receive(&bytes),
            Err(SnapshotRefused::MissingBaseline {
                sequence: 1,
                baseline: 0
            })
        );
        assert_eq!(rx.latest(), None);
        assert_eq!(rx.stats().missing_baseline, 1);
        // Snapshot 0 arrives late: older than nothing applied, so it applies.
        rx.receive(&first).unwrap();
        assert_eq!(rx.latest(), Some((0, &1)));
        // Now 1 resolves.
        rx.receive(&bytes).unwrap();
        assert_eq!(rx.latest(), Some((1, &2)));
    }

    #[test]
    fn stale_and_duplicate_snapshots_are_dropped_and_counted() {
        let mut tx = Tx::new(65534);
        let mut rx = Rx::new();
        let (a, _) = send(&mut tx, 1);
        let (b, _) = send(&mut tx, 2);
        let (c, sent) = send(&mut tx, 3);
        assert_eq!(sent.sequence, 0);
        rx.receive(&c).unwrap();
        assert_eq!(
            rx.receive(&b),
            Err(SnapshotRefused::Stale { sequence: 65535 })
        );
        assert_eq!(
            rx.receive(&a),
            Err(SnapshotRefused::Stale { sequence: 65534 })
        );
        assert_eq!(rx.receive(&c), Err(SnapshotRefused::Stale { sequence: 0 }));
        assert_eq!(rx.stats().stale, 3);
        assert_eq!(rx.stats().applied_full, 1);
        assert_eq!(rx.latest(), Some((0, &3)));
    }

    #[test]
    fn malformed_bytes_are_refused_and_change_nothing() {
        let mut tx = Tx::new(0);
        let mut rx = Rx::new();
        let (bytes, _) = send(&mut tx, 5);
        rx.receive(&bytes).unwrap();
        let (next, _) = send(&mut tx, 6);
        // Truncated, then with a trailing byte.
        assert!(matches!(
            rx.receive(&next[..3]),
            Err(SnapshotRefused::Malformed(_))
        ));
        let mut long = next.clone();
        long.push(0);
        assert!(matches!(
            rx.receive(&long),
            Err(SnapshotRefused::Malformed(_))
        ));
        assert_eq!(rx.stats().malformed, 2);
        assert_eq!(rx.latest(), Some((0, &5)));
        // Hostile bytes of every length never panic; whatever applies is newer.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..2000usize {
            let mut junk = vec![0u8; len % 12];
            for b in junk.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            let before = rx.latest().map(|(s, _)| s);
            if let Ok(applied) = rx.receive(&junk) {
                assert!(before.is_none_or(|b| newer(applied.sequence, b)));
            }
        }
    }

    #[test]
    fn the_window_forgets_what_it_jumped_over() {
        let mut tx = Tx::new(0);
        let mut rx = Rx::new();
        let (bytes, sent) = send(&mut tx, 1);
        tx.sent_in(sent.sequence, Sequence(0));
        rx.receive(&bytes).unwrap();
        tx.packet_acked(Sequence(0));
        // 7 sent, none received; the 8th is a delta against 0 (7 back).
        for v in 2..9 {
            send(&mut tx, v);
        }
        let (bytes, sent) = send(&mut tx, 9);
        assert_eq!(sent.baseline, None, "0 is out of the sender's ring");
        assert_eq!(sent.sequence, 8);
        rx.receive(&bytes).unwrap();
        assert_eq!(rx.get(0), None, "8 back: out of the receiver's window");
        // A header naming 0 as baseline of 9 is outside the ring: malformed on write.
        let mut buf = [0u8; 8];
        let mut h = SnapshotHeader {
            sequence: 9,
            baseline: Some(0),
        };
        assert!(
            h.serialize::<8, _>(&mut WriteStream::new(&mut buf))
                .is_err()
        );
    }

    #[test]
    fn after_resync_no_earlier_snapshot_is_a_baseline() {
        let mut tx = Tx::new(0);
        for v in 0..4u32 {
            let (_, sent) = send(&mut tx, v);
            tx.sent_in(sent.sequence, Sequence(sent.sequence));
        }
        tx.packet_acked(Sequence(3));
        assert_eq!(tx.baseline(), Some(3));
        tx.resync();
        assert_eq!(tx.baseline(), None);
        // A late ack of a packet from before the resync marks nothing.
        assert_eq!(tx.packet_acked(Sequence(2)), None);
        let (_, sent) = send(&mut tx, 4);
        assert_eq!((sent.sequence, sent.baseline), (4, None));
        tx.sent_in(4, Sequence(4));
        tx.packet_acked(Sequence(4));
        let (_, sent) = send(&mut tx, 5);
        assert_eq!(sent.baseline, Some(4));
    }

    #[test]
    fn a_failed_encode_takes_no_sequence() {
        let mut tx = Tx::new(0);
        let mut small = [0u8; 3];
        assert!(tx.encode_into(&1, &mut small).is_err());
        assert_eq!(tx.next_sequence(), 0);
        assert_eq!(tx.get(0), None);
        assert_eq!(tx.stats().full, 0);
    }

    #[test]
    fn sequence_order_wraps() {
        assert!(newer(0, 65535));
        assert!(newer(100, 65500));
        assert!(!newer(65535, 0));
        assert!(!newer(7, 7));
    }
}
