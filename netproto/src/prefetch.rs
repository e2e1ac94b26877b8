//! Software prefetch: asking the CPU for a cache line before the code that reads it
//! runs, so that the fetches of many connections' state overlap instead of stalling the
//! server one after another.
//!
//! Why: a game server sleeps between ticks, and on a shared machine whatever else runs
//! meanwhile evicts its state from the caches. Each tick then reads every connection's
//! state from memory again, and the per-connection code (a few hundred instructions a
//! datagram) waits on each miss in turn: profiled at 100 clients on real sockets, the
//! hottest functions spent most of their time on single loads of a connection's
//! windows and queues. A receive batch (or the list of connections a tick visits) is
//! known before any of it is processed, so the server first names the lines each
//! connection will need (`ServerStack::prefetch`, which calls each structure's
//! `prefetch*` methods) and only then processes them.
//!
//! A prefetch is a hint: it never faults, changes no value, and a wrong guess only
//! wastes a fetch. On x86-64 it is `prefetcht0` through `safe_arch`'s safe wrapper
//! (std's intrinsic is `unsafe` outside `#[target_feature]` functions); elsewhere it
//! does nothing.

/// Asks for the cache line that holds the start of `value`, without waiting for it.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    safe_arch::prefetch_t0(value);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = value;
}

/// Asks for the cache line of `slice[index]`, if there is one.
#[inline(always)]
pub(crate) fn prefetch_at<T>(slice: &[T], index: usize) {
    if let Some(value) = slice.get(index) {
        prefetch(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefetch changes nothing by its signature (a shared reference, no interior
    /// mutability): what can go wrong is the index. Callers name slots that may not be
    /// there (an empty ring, the slot past the newest): passed over, never a panic.
    #[test]
    fn prefetch_at_passes_over_an_index_past_the_end() {
        let values = [1u64, 2, 3];
        prefetch_at(&values, 2);
        prefetch_at(&values, 3);
        prefetch_at(&values, usize::MAX);
        prefetch_at::<u64>(&[], 0);
    }
}
