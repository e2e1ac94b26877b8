//! Growing a buffer with what a peer actually sent, within what it may send.

/// Makes room for `additional` more items in `v`, doubling its capacity at most but
/// never beyond `limit` items (what the buffer may ever hold): its capacity stays
/// below twice what it holds (exactly what it holds after its first items) and within
/// the limit. Reassembly buffers use it so that the memory a peer pins grows with the
/// bytes it sent, not with the size it declared.
pub(crate) fn grow_within<T>(v: &mut Vec<T>, additional: usize, limit: usize) {
    let needed = v.len().saturating_add(additional);
    if needed <= v.capacity() {
        return;
    }
    let target = v.capacity().saturating_mul(2).min(limit).max(needed);
    v.reserve_exact(target - v.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_doubles_at_most_and_stops_at_the_limit() {
        let mut v: Vec<u8> = Vec::new();
        grow_within(&mut v, 10, 100);
        assert_eq!(v.capacity(), 10, "exactly the first items");
        v.extend([0; 10]);
        grow_within(&mut v, 1, 100);
        assert_eq!(v.capacity(), 20, "doubled");
        v.extend([0; 10]);
        grow_within(&mut v, 30, 40);
        assert_eq!(v.capacity(), 50, "what is needed, even past the limit");
        let mut w: Vec<u8> = Vec::with_capacity(40);
        w.extend([0; 40]);
        grow_within(&mut w, 1, 45);
        assert_eq!(w.capacity(), 45, "the limit, not twice");
    }
}
