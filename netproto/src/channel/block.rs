//! Blocks: a message too large for one packet, split into fragments that are each
//! acked and resent on their own, and reassembled before delivery.

use crate::Time;
use crate::grow::grow_within;

/// How far one block has come: see
/// [`MessageLayer::send_progress`](super::MessageLayer::send_progress) and
/// [`MessageLayer::receive_progress`](super::MessageLayer::receive_progress).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockProgress {
    /// The block's message id.
    pub id: u16,
    /// Bytes acked (sending) or received (receiving).
    pub bytes: usize,
    /// The block's size in bytes (the message encoded).
    pub total: usize,
}

impl BlockProgress {
    /// `bytes / total`, in `[0, 1]`.
    pub fn fraction(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.bytes as f64 / self.total as f64
        }
    }
}

/// A block being sent: its encoded bytes and the state of each fragment.
#[derive(Debug)]
pub(crate) struct OutgoingBlock {
    bytes: Box<[u8]>,
    fragment_size: usize,
    /// When each fragment last went into a packet (`-inf`: never).
    last_sent: Box<[Time]>,
    acked: Box<[bool]>,
    /// Fragments not acked yet.
    remaining: usize,
}

impl OutgoingBlock {
    pub(crate) fn new(bytes: Box<[u8]>, fragment_size: usize) -> Self {
        let count = bytes.len().div_ceil(fragment_size).max(1);
        Self {
            bytes,
            fragment_size,
            last_sent: vec![Time::NEVER; count].into_boxed_slice(),
            acked: vec![false; count].into_boxed_slice(),
            remaining: count,
        }
    }

    pub(crate) fn fragments(&self) -> usize {
        self.acked.len()
    }

    /// The block's size in bytes (the message encoded).
    pub(crate) fn size(&self) -> usize {
        self.bytes.len()
    }

    /// Fragments not acked yet.
    pub(crate) fn remaining(&self) -> usize {
        self.remaining
    }

    /// `true` when fragment `index` exists and is not acked yet.
    pub(crate) fn unacked(&self, index: usize) -> bool {
        self.acked.get(index).is_some_and(|a| !a)
    }

    /// When fragment `index` last went into a packet ([`Time::NEVER`]: never).
    pub(crate) fn last_sent(&self, index: usize) -> Time {
        self.last_sent.get(index).copied().unwrap_or(Time::NEVER)
    }

    /// Marks fragment `index` as sent at `now`; returns `true` when it had been sent
    /// before (a resend).
    pub(crate) fn mark_sent(&mut self, index: usize, now: Time) -> bool {
        self.last_sent
            .get_mut(index)
            .is_some_and(|t| core::mem::replace(t, now) != Time::NEVER)
    }

    /// The bytes of fragment `index`, for a stream that takes them as `&mut` (a
    /// writer leaves them as they are).
    pub(crate) fn fragment_mut(&mut self, index: usize) -> &mut [u8] {
        fragment_range(self.bytes.len(), self.fragment_size, index)
            .and_then(|r| self.bytes.get_mut(r))
            .unwrap_or_default()
    }

    /// Bytes of the fragments acked so far.
    pub(crate) fn acked_bytes(&self) -> usize {
        acked_len(&self.acked, self.bytes.len(), self.fragment_size)
    }

    /// Marks a fragment acked; returns `true` when that completes the block.
    pub(crate) fn ack(&mut self, index: usize) -> bool {
        if let Some(acked) = self.acked.get_mut(index)
            && !*acked
        {
            *acked = true;
            self.remaining -= 1;
        }
        self.remaining == 0
    }
}

/// Bytes of the fragments marked in `done` of a block of `size` bytes.
fn acked_len(done: &[bool], size: usize, fragment_size: usize) -> usize {
    let count = done.iter().filter(|d| **d).count();
    let last_short = done.last() == Some(&true) && !size.is_multiple_of(fragment_size);
    let full = count * fragment_size;
    if last_short {
        full - (fragment_size - size % fragment_size)
    } else {
        full
    }
}

/// The byte range of fragment `index` of a block of `size` bytes.
pub(crate) fn fragment_range(
    size: usize,
    fragment_size: usize,
    index: usize,
) -> Option<core::ops::Range<usize>> {
    let start = index.checked_mul(fragment_size)?;
    if start >= size {
        return None;
    }
    Some(start..(start + fragment_size).min(size))
}

/// A block being reassembled. Its memory grows with the fragments received, never
/// with the size its fragments declare: the bytes of each fragment are appended to an
/// arena in arrival order, the fragment indexes to a list in the same order, and a
/// sparse bitmap (one word of 64 fragments per word touched) says which fragments
/// were received. The block is laid out in order only when it completes
/// ([`assemble`](Self::assemble)), once every byte of it has arrived. A peer that
/// starts a block of the largest size with one fragment makes us hold that fragment
/// and a few words, not the block.
///
/// Every operation takes constant or logarithmic time per fragment whatever order
/// the fragments come in (plus, for a fragment in a word not touched before, moving
/// at most `fragments / 64` words of the bitmap).
#[derive(Debug)]
pub(crate) struct PartialBlock {
    id: u16,
    /// The block's size, as its first fragment declared it.
    size: usize,
    /// Fragments not received yet.
    remaining: usize,
    /// The bytes of the fragments received, in arrival order.
    arena: Vec<u8>,
    /// The index of each fragment received, in arrival order.
    order: Vec<u16>,
    /// `(w, bits)`, sorted by `w`: bit `b` set when fragment `64 * w + b` was received.
    seen: Vec<(u16, u64)>,
}

impl PartialBlock {
    /// A block of `size` bytes in fragments of `fragment_size` bytes, nothing received
    /// yet: allocates nothing. (The configuration keeps a block within 16 MiB and
    /// 65536 fragments, and the payload format the size within `max_block_size`.)
    pub(crate) fn new(id: u16, size: usize, fragment_size: usize) -> Self {
        Self {
            id,
            size,
            remaining: size.div_ceil(fragment_size),
            arena: Vec::new(),
            order: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// The block's message id.
    pub(crate) fn id(&self) -> u16 {
        self.id
    }

    /// The size of the block, as declared.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Fragments not received yet.
    pub(crate) fn remaining(&self) -> usize {
        self.remaining
    }

    /// Bytes of the fragments received so far.
    pub(crate) fn received_bytes(&self) -> usize {
        self.arena.len()
    }

    /// Where fragment `index`'s bit lives: its word's position in `seen` (or where
    /// the word would go) and the bit.
    fn word(&self, index: u16) -> (Result<usize, usize>, u64) {
        let w = index / 64;
        (
            self.seen.binary_search_by_key(&w, |&(k, _)| k),
            1u64 << (index % 64),
        )
    }

    /// Whether fragment `index` was received.
    pub(crate) fn has(&self, index: usize) -> bool {
        let Ok(index) = u16::try_from(index) else {
            return false;
        };
        match self.word(index) {
            (Ok(at), bit) => self.seen[at].1 & bit != 0,
            (Err(_), _) => false,
        }
    }

    /// Stores a fragment (already validated); returns `true` when it was new.
    pub(crate) fn store(&mut self, index: usize, fragment_size: usize, data: &[u8]) -> bool {
        let (Some(range), Ok(key)) = (
            fragment_range(self.size, fragment_size, index),
            u16::try_from(index),
        ) else {
            return false;
        };
        if range.len() != data.len() {
            return false;
        }
        let fragments = self.size.div_ceil(fragment_size);
        match self.word(key) {
            (Ok(at), bit) => {
                let word = &mut self.seen[at].1;
                if *word & bit != 0 {
                    return false;
                }
                *word |= bit;
            }
            (Err(at), bit) => {
                grow_within(&mut self.seen, 1, fragments.div_ceil(64));
                self.seen.insert(at, (key / 64, bit));
            }
        }
        grow_within(&mut self.order, 1, fragments);
        self.order.push(key);
        grow_within(&mut self.arena, data.len(), self.size);
        self.arena.extend_from_slice(data);
        self.remaining -= 1;
        true
    }

    /// Writes every fragment received into `block` (of the block's size) at its place.
    pub(crate) fn assemble(&self, fragment_size: usize, block: &mut [u8]) {
        let mut at = 0;
        for &index in &self.order {
            let Some(range) = fragment_range(self.size, fragment_size, usize::from(index)) else {
                continue;
            };
            let len = range.len();
            if let (Some(dst), Some(src)) = (block.get_mut(range), self.arena.get(at..at + len)) {
                dst.copy_from_slice(src);
            }
            at += len;
        }
    }

    /// Heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap(&self) -> usize {
        self.arena.capacity()
            + self.order.capacity() * size_of::<u16>()
            + self.seen.capacity() * size_of::<(u16, u64)>()
    }
}

/// The blocks of one reliable channel being reassembled (the receive side's): at
/// most `max_blocks_in_flight`, each allocated when its first fragment is applied and
/// dropped when it completes.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    partials: Vec<PartialBlock>,
}

impl Reassembly {
    /// The block `id`, if it is being reassembled.
    pub(crate) fn get(&self, id: u16) -> Option<&PartialBlock> {
        self.partials.iter().find(|p| p.id == id)
    }

    /// Blocks being reassembled.
    pub(crate) fn len(&self) -> usize {
        self.partials.len()
    }

    /// Forgets block `id` (it completed).
    pub(crate) fn remove(&mut self, id: u16) {
        self.partials.retain(|p| p.id != id);
    }

    /// The block `id`, started (`size` bytes in fragments of `fragment_size`) if it
    /// was not being reassembled.
    pub(crate) fn get_or_start(
        &mut self,
        id: u16,
        size: usize,
        fragment_size: usize,
    ) -> &mut PartialBlock {
        let at = match self.partials.iter().position(|p| p.id == id) {
            Some(at) => at,
            None => {
                // One entry more, not a doubling: the list holds at most
                // max_blocks_in_flight entries, each allocated when its block starts.
                self.partials.reserve_exact(1);
                self.partials
                    .push(PartialBlock::new(id, size, fragment_size));
                self.partials.len() - 1
            }
        };
        &mut self.partials[at]
    }

    /// The block with the lowest id counted from `next` (the next id to deliver).
    pub(crate) fn first(&self, next: u16) -> Option<&PartialBlock> {
        self.partials.iter().min_by_key(|p| p.id.wrapping_sub(next))
    }
}

/// The most heap bytes a [`PartialBlock`] holds besides the fragments' bytes, per
/// fragment of the largest block: its arrival list (2 bytes per fragment) and its
/// bitmap (16 bytes per 64 fragments). With the fragments' bytes (at most the block
/// size), a reassembly holds at most `max_block_size + 9 * max_fragments / 4`.
pub(crate) const fn partial_block_heap(max_block_size: usize, max_fragments: usize) -> usize {
    max_block_size
        .saturating_add(max_fragments.saturating_mul(size_of::<u16>()))
        .saturating_add(
            max_fragments
                .div_ceil(64)
                .saturating_mul(size_of::<(u16, u64)>()),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_cover_the_block_and_reassemble() {
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let mut out = OutgoingBlock::new(data.clone().into_boxed_slice(), 300);
        assert_eq!(out.fragments(), 4);
        assert_eq!(out.fragment_mut(3).len(), 100);
        assert!(out.fragment_mut(4).is_empty());
        let mut partial = PartialBlock::new(7, 1000, 300);
        for i in [3, 1, 0, 2] {
            assert!(partial.store(i, 300, out.fragment_mut(i)));
            assert!(!partial.store(i, 300, out.fragment_mut(i)));
        }
        assert_eq!(partial.remaining, 0);
        assert_eq!(partial.received_bytes(), 1000);
        let mut block = vec![0; 1000];
        partial.assemble(300, &mut block);
        assert_eq!(block, data);
        assert!(!out.ack(3));
        assert_eq!(out.acked_bytes(), 100);
        assert!(!out.ack(0));
        assert!(!out.ack(0));
        assert_eq!(out.acked_bytes(), 400);
        assert!(!out.ack(1));
        assert!(out.ack(2));
        assert_eq!(out.acked_bytes(), 1000);
    }

    #[test]
    fn reassembly_memory_grows_with_the_fragments_received() {
        // A 1 MiB block in 128-byte fragments (8192), started by its last fragment
        // (one byte): that byte and a few words, not the block.
        let (size, fs) = ((8191 * 128) + 1, 128);
        let mut partial = PartialBlock::new(1, size, fs);
        assert_eq!(partial.heap(), 0);
        assert!(partial.store(8191, fs, &[9]));
        assert_eq!(partial.heap(), 1 + 2 + 16);
        assert!(!partial.store(8191, fs, &[9]));
        assert!(partial.has(8191) && !partial.has(8190) && !partial.has(70_000));
        // Every other fragment, backwards (a new bitmap word each 64 fragments, in
        // front of the others): at most twice what arrived, within the bound.
        let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        let mut stored = 1;
        for index in (0..8191).rev().step_by(2) {
            let range = fragment_range(size, fs, index).expect("in the block");
            assert!(partial.store(index, fs, &data[range]));
            stored += 1;
            let arrived = partial.received_bytes() + 2 * stored + 16 * partial.seen.len();
            assert_eq!(partial.received_bytes(), 1 + (stored - 1) * fs);
            assert!(
                partial.heap() <= 2 * arrived,
                "{} > 2 x {arrived}",
                partial.heap()
            );
        }
        assert_eq!(stored, 4097);
        // The rest, forwards; the last one completes it.
        for index in (1..8191).step_by(2) {
            let range = fragment_range(size, fs, index).expect("in the block");
            assert!(partial.store(index, fs, &data[range]));
            assert!(partial.heap() <= partial_block_heap(size, 8192));
        }
        assert_eq!(partial.remaining, 0);
        assert_eq!(partial.received_bytes(), size);
        let mut block = vec![0; size];
        partial.assemble(fs, &mut block);
        let mut expected = data.clone();
        expected[size - 1] = 9;
        assert_eq!(block, expected);
        // Wrong lengths and indexes are refused.
        let mut partial = PartialBlock::new(2, 1000, 300);
        assert!(!partial.store(0, 300, &[0; 299]));
        assert!(!partial.store(4, 300, &[0; 100]));
        assert!(!partial.store(3, 300, &[0; 99]));
        assert_eq!(partial.heap(), 0);
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod size_tests {
    /// The bookkeeping `LayerConfig::memory_bound`'s documentation states.
    #[test]
    fn a_reassembly_is_as_documented() {
        assert_eq!(size_of::<super::PartialBlock>(), 96);
    }
}
