//! Blocks: a message too large for one packet, split into fragments that are each
//! acked and resent on their own, and reassembled before delivery.

use crate::Time;

/// A block being sent: its encoded bytes and the state of each fragment.
#[derive(Debug)]
pub(crate) struct OutgoingBlock {
    pub(crate) bytes: Box<[u8]>,
    pub(crate) fragment_size: usize,
    /// When each fragment last went into a packet (`-inf`: never).
    pub(crate) last_sent: Box<[Time]>,
    pub(crate) acked: Box<[bool]>,
    /// Fragments not acked yet.
    pub(crate) remaining: usize,
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

/// A block being reassembled.
#[derive(Debug)]
pub(crate) struct PartialBlock {
    pub(crate) id: u16,
    pub(crate) bytes: Vec<u8>,
    pub(crate) received: Vec<bool>,
    pub(crate) remaining: usize,
    received_bytes: usize,
}

impl PartialBlock {
    pub(crate) fn new(id: u16, size: usize, fragment_size: usize) -> Self {
        let count = size.div_ceil(fragment_size);
        Self {
            id,
            bytes: vec![0; size],
            received: vec![false; count],
            remaining: count,
            received_bytes: 0,
        }
    }

    /// Bytes of the fragments received so far.
    pub(crate) fn received_bytes(&self) -> usize {
        self.received_bytes
    }

    /// Stores a fragment (already validated); returns `true` when it was new.
    pub(crate) fn store(&mut self, index: usize, fragment_size: usize, data: &[u8]) -> bool {
        let Some(range) = fragment_range(self.bytes.len(), fragment_size, index) else {
            return false;
        };
        match (self.received.get_mut(index), self.bytes.get_mut(range)) {
            (Some(seen), Some(dst)) if !*seen && dst.len() == data.len() => {
                dst.copy_from_slice(data);
                *seen = true;
                self.remaining -= 1;
                self.received_bytes += data.len();
                true
            }
            _ => false,
        }
    }
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
        assert_eq!(partial.bytes, data);
        assert!(!out.ack(3));
        assert_eq!(out.acked_bytes(), 100);
        assert!(!out.ack(0));
        assert!(!out.ack(0));
        assert_eq!(out.acked_bytes(), 400);
        assert!(!out.ack(1));
        assert!(out.ack(2));
        assert_eq!(out.acked_bytes(), 1000);
    }
}
