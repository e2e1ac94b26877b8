//! The per-packet scratch space of a message layer, and why a server shares one.

use super::receive::Staged;
use super::select::Selection;

/// What [`write_packet`](super::MessageLayer::write_packet) selects a packet's contents
/// into and [`read_packet`](super::MessageLayer::read_packet) stages a payload in: empty
/// between packets, its buffers kept for the next.
///
/// A layer has its own. The transport's stacks (and `MessageStack`) lend one of theirs
/// to every packet instead: a server's tick visits each of its connections in turn,
/// and a connection's own scratch would be cold in the cache by then, where the one
/// the stack lends was used by the connection before. Nothing of one connection's
/// packet is left in it for the next: the selection is cleared before each packet,
/// and a staged message is moved into its queue (which leaves its blank) or made
/// blank again.
#[derive(Debug)]
pub(crate) struct Scratch<M> {
    pub(crate) selection: Selection,
    pub(crate) staged: Staged<M>,
}

impl<M> Default for Scratch<M> {
    fn default() -> Self {
        Self {
            selection: Selection::default(),
            staged: Staged::default(),
        }
    }
}
