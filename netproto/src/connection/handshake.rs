//! What a server remembers of handshakes: the keys of handshakes in progress (by
//! address, at most one per client id) and the history of the connect tokens it has
//! accepted (by their tag). Both tables are bounded by the configuration, allocated
//! once, and hold nothing for a request that failed a check.
//!
//! The token history follows netcode 1.4.5's rules, so that the keys inside a token
//! encrypt exactly one session:
//!
//! * an entry is created **pending** when the server first accepts a request with
//!   that token; a pending entry admits the same token again from the same address
//!   only (a client retransmitting its request), no other;
//! * it becomes **consumed** when the handshake completes and the client gets a slot;
//!   a consumed entry admits nothing, from any address, whether or not its session is
//!   still on;
//! * entries live until their token expires; a history full of unexpired entries
//!   refuses a new token instead of evicting one (evicting would let a used token in
//!   again: a second session under the same keys, the same nonces).
//!
//! The restart rule, the history's counterpart across server runs, is the server's:
//! see `Server::handle_request`.
//!
//! Handshakes in progress are the flood-facing table. A handshake lives at most its
//! token's timeout from its first request (a client's retransmissions do not extend
//! it); one client id holds at most one (its newest request replaces the older one);
//! and when the table is full, a new authenticated request replaces the handshake that
//! started first, once that one has had [`HANDSHAKE_GRACE`] to complete. So a holder
//! of valid tokens who keeps re-requesting cannot keep new players out: each new
//! player's handshake gets at least the grace period, many round trips.

use crate::Time;
use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use crate::netcode::{Key, MAC_BYTES};

/// The tag of a connect token's sealed private part: its identity. It travels in the
/// clear in every request, so it is no secret: the history keys a hash map with it.
pub(crate) type TokenTag = [u8; MAC_BYTES];

/// How long a new handshake is safe from being replaced by another when the table
/// is full: ten of a client's request retransmissions at the default 100 ms, and many
/// round trips on any playable link.
pub(crate) const HANDSHAKE_GRACE: Duration = Duration::from_secs(1);

/// A handshake in progress: the request's token opened and passed every check; the
/// client has been sent a challenge and must answer from the same address.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) send_key: Key,
    pub(crate) receive_key: Key,
    /// The connection timeout the token sets, seconds: also how long the handshake
    /// may take from its first request.
    pub(crate) timeout: Duration,
    /// The token's expiry, Unix seconds: the handshake must complete before it.
    pub(crate) expire_timestamp: u64,
    pub(crate) tag: TokenTag,
    /// The token's client id: one handshake per client id.
    pub(crate) client_id: u64,
    /// When the first request of this handshake arrived (server time).
    started: Time,
}

impl Pending {
    pub(crate) fn new(
        send_key: Key,
        receive_key: Key,
        timeout: Duration,
        expire_timestamp: u64,
        tag: TokenTag,
        client_id: u64,
        now: Time,
    ) -> Self {
        Self {
            send_key,
            receive_key,
            timeout,
            expire_timestamp,
            tag,
            client_id,
            started: now,
        }
    }

    /// Its token expired, its time is up, or the clock went back past its start (the
    /// client's retransmissions start it again).
    fn expired(&self, now: Time, unix: u64) -> bool {
        let age = now.secs_since(self.started);
        unix >= self.expire_timestamp || age >= self.timeout.as_secs_f64() || age < 0.0
    }

    /// Old enough to be replaced by a new handshake when the table is full.
    fn replaceable(&self, now: Time) -> bool {
        now.secs_since(self.started) >= HANDSHAKE_GRACE.as_secs_f64()
    }
}

/// Where a token is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenState {
    /// Its handshake is under way: it admits its first address again, no other.
    Pending,
    /// It opened a session: it admits nothing more.
    Consumed,
}

#[derive(Clone, Copy, Debug)]
struct TokenEntry<A> {
    address: A,
    expire_timestamp: u64,
    state: TokenState,
}

/// Why a token is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenRefusal {
    /// First presented from another address, and not yet consumed.
    OtherAddress,
    /// It already opened a session.
    Consumed,
    /// The history is full of unexpired tokens.
    Full,
}

/// What [`Handshakes::start`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandshakeStart {
    /// A new handshake (or the same one again: a retransmitted request).
    Started,
    /// A new handshake, in place of the one that started first: the table was full.
    Replaced,
    /// The table is full of handshakes younger than [`HANDSHAKE_GRACE`].
    Busy,
}

/// The handshake tables of a server.
#[derive(Debug)]
pub(crate) struct Handshakes<A> {
    pending: HashMap<A, Pending>,
    /// The address of each client id's handshake.
    by_client: HashMap<u64, A>,
    pending_limit: usize,
    tokens: HashMap<TokenTag, TokenEntry<A>>,
    token_limit: usize,
}

impl<A: Copy + Eq + Hash> Handshakes<A> {
    /// Tables for `pending_limit` handshakes in progress and eight times as many
    /// tokens in the history.
    pub(crate) fn new(pending_limit: usize) -> Self {
        let token_limit = pending_limit.saturating_mul(8);
        Self {
            pending: HashMap::with_capacity(pending_limit),
            by_client: HashMap::with_capacity(pending_limit),
            pending_limit,
            tokens: HashMap::with_capacity(token_limit),
            token_limit,
        }
    }

    /// Whether the history refuses this token from `from`: consumed, or pending
    /// from another address. A lookup only: an unauthenticated request adds nothing.
    pub(crate) fn check_token(&self, tag: &TokenTag, from: &A) -> Result<(), TokenRefusal> {
        match self.tokens.get(tag) {
            Some(entry) if entry.state == TokenState::Consumed => Err(TokenRefusal::Consumed),
            Some(entry) if entry.address != *from => Err(TokenRefusal::OtherAddress),
            _ => Ok(()),
        }
    }

    /// Records an authenticated token as pending from `from` (a no-op if it is
    /// already). When the history is full, expired tokens are forgotten; if it is
    /// still full, the token is refused: no unexpired entry is ever evicted.
    pub(crate) fn remember_token(
        &mut self,
        tag: TokenTag,
        from: A,
        expire_timestamp: u64,
        unix: u64,
    ) -> Result<(), TokenRefusal> {
        self.check_token(&tag, &from)?;
        if self.tokens.contains_key(&tag) {
            return Ok(());
        }
        if self.tokens.len() >= self.token_limit {
            self.tokens.retain(|_, e| e.expire_timestamp > unix);
            if self.tokens.len() >= self.token_limit {
                return Err(TokenRefusal::Full);
            }
        }
        self.tokens.insert(
            tag,
            TokenEntry {
                address: from,
                expire_timestamp,
                state: TokenState::Pending,
            },
        );
        Ok(())
    }

    /// The token opened a session: it admits nothing more, until it expires and the
    /// server refuses it as expired anyway.
    pub(crate) fn consume(&mut self, tag: &TokenTag) {
        if let Some(entry) = self.tokens.get_mut(tag) {
            entry.state = TokenState::Consumed;
        }
    }

    /// Starts the handshake of `from`, or keeps it if it is the same token's (a
    /// retransmitted request: its time keeps running from the first). Any other
    /// handshake of the same client id ends. When the table is full of live
    /// handshakes, the one that started first is replaced if it is older than
    /// [`HANDSHAKE_GRACE`]; otherwise the request is refused as busy.
    pub(crate) fn start(
        &mut self,
        from: A,
        pending: Pending,
        now: Time,
        unix: u64,
    ) -> HandshakeStart {
        if let Some(current) = self.pending.get(&from)
            && current.tag == pending.tag
            && !current.expired(now, unix)
        {
            return HandshakeStart::Started;
        }
        if let Some(&other) = self.by_client.get(&pending.client_id)
            && other != from
        {
            self.remove(&other);
        }
        let mut started = HandshakeStart::Started;
        if !self.pending.contains_key(&from) && self.pending.len() >= self.pending_limit {
            self.expire_pending(now, unix);
            if self.pending.len() >= self.pending_limit {
                let first = self
                    .pending
                    .iter()
                    .filter(|(_, p)| p.replaceable(now))
                    // The tie between handshakes started at the same instant is
                    // broken by client id (unique in the table), never by the map's
                    // iteration order, which is random per map: the server stays
                    // deterministic given its inputs.
                    .min_by(|a, b| {
                        a.1.started
                            .total_cmp(&b.1.started)
                            .then(a.1.client_id.cmp(&b.1.client_id))
                    })
                    .map(|(address, _)| *address);
                let Some(first) = first else {
                    return HandshakeStart::Busy;
                };
                self.remove(&first);
                started = HandshakeStart::Replaced;
            }
        }
        let client_id = pending.client_id;
        if let Some(old) = self.pending.insert(from, pending)
            && self.by_client.get(&old.client_id) == Some(&from)
        {
            self.by_client.remove(&old.client_id);
        }
        self.by_client.insert(client_id, from);
        started
    }

    /// The live handshake of `from`, if any.
    pub(crate) fn pending(&self, from: &A, now: Time, unix: u64) -> Option<&Pending> {
        self.pending.get(from).filter(|p| !p.expired(now, unix))
    }

    /// Ends the handshake of `from` (it connected).
    pub(crate) fn finish(&mut self, from: &A) -> Option<Pending> {
        self.remove(from)
    }

    fn remove(&mut self, from: &A) -> Option<Pending> {
        let pending = self.pending.remove(from)?;
        if self.by_client.get(&pending.client_id) == Some(from) {
            self.by_client.remove(&pending.client_id);
        }
        Some(pending)
    }

    fn expire_pending(&mut self, now: Time, unix: u64) {
        let by_client = &mut self.by_client;
        self.pending.retain(|address, p| {
            let keep = !p.expired(now, unix);
            if !keep && by_client.get(&p.client_id) == Some(address) {
                by_client.remove(&p.client_id);
            }
            keep
        });
    }

    /// Forgets expired handshakes and tokens.
    pub(crate) fn expire(&mut self, now: Time, unix: u64) {
        self.expire_pending(now, unix);
        self.tokens.retain(|_, e| e.expire_timestamp > unix);
    }

    /// Handshakes in progress.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Tokens in the history.
    pub(crate) fn tokens_len(&self) -> usize {
        self.tokens.len()
    }

    /// The most entries of each table.
    pub(crate) fn limits(&self) -> (usize, usize) {
        (self.pending_limit, self.token_limit)
    }
}

/// Addresses the [`ForeignProtocolLog`] remembers: a fixed table, so a flood from
/// many addresses costs no memory, only the global cap's few lines.
pub(crate) const FOREIGN_PROTOCOL_ADDRESSES: usize = 16;

/// How long one address stays quiet in the log after its request for another
/// protocol id was logged.
pub(crate) const FOREIGN_PROTOCOL_QUIET: Duration = Duration::from_secs(10);

/// Lines the log writes per [`FOREIGN_PROTOCOL_QUIET`] window, whatever the number
/// of addresses (a spoofed flood included).
pub(crate) const FOREIGN_PROTOCOL_LINES: u32 = 5;

/// The rate limit of the server's warning about requests for another protocol id
/// (a client built with other messages or another channel configuration): once per
/// address per [`FOREIGN_PROTOCOL_QUIET`], [`FOREIGN_PROTOCOL_LINES`] lines per
/// window in all. Its table is fixed ([`FOREIGN_PROTOCOL_ADDRESSES`] entries, in
/// place): a hostile request allocates nothing.
#[derive(Debug)]
pub(crate) struct ForeignProtocolLog<A> {
    /// The addresses logged last, with when; the oldest is replaced.
    recent: [Option<(A, Time)>; FOREIGN_PROTOCOL_ADDRESSES],
    window_start: Time,
    lines: u32,
    /// Requests not logged since the last line.
    suppressed: u64,
}

impl<A: Copy + Eq> ForeignProtocolLog<A> {
    pub(crate) fn new(now: Time) -> Self {
        Self {
            recent: [None; FOREIGN_PROTOCOL_ADDRESSES],
            window_start: now,
            lines: 0,
            suppressed: 0,
        }
    }

    /// `Some(requests suppressed since the last line)` when a request from `from` at
    /// `now` may be logged; `None` when it is counted as suppressed instead.
    pub(crate) fn admit(&mut self, now: Time, from: A) -> Option<u64> {
        let quiet = FOREIGN_PROTOCOL_QUIET.as_secs_f64();
        // A clock that went back restarts the window and the addresses' quiet time.
        if now < self.window_start || now.secs_since(self.window_start) >= quiet {
            self.window_start = now;
            self.lines = 0;
        }
        let recent = self
            .recent
            .iter()
            .flatten()
            .any(|&(addr, at)| addr == from && now >= at && now.secs_since(at) < quiet);
        if recent || self.lines >= FOREIGN_PROTOCOL_LINES {
            self.suppressed += 1;
            return None;
        }
        self.lines += 1;
        let own = self
            .recent
            .iter()
            .position(|e| e.is_some_and(|(addr, _)| addr == from));
        // Its own entry, else an empty one, else the one logged first.
        let index = own.unwrap_or_else(|| {
            let mut oldest = 0;
            for (i, entry) in self.recent.iter().enumerate() {
                match (entry, self.recent[oldest]) {
                    (None, _) => return i,
                    (Some((_, at)), Some((_, first))) if *at < first => oldest = i,
                    _ => {}
                }
            }
            oldest
        });
        let slot = self.recent.get_mut(index);
        if let Some(slot) = slot {
            *slot = Some((from, now));
        }
        Some(core::mem::take(&mut self.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: f64) -> Time {
        Time::from_secs_f64(seconds)
    }

    fn pending(tag: u8, client_id: u64, now: Time) -> Pending {
        Pending::new(
            Key::from_bytes([1; 32]),
            Key::from_bytes([2; 32]),
            Duration::from_secs(5),
            1000,
            [tag; 16],
            client_id,
            now,
        )
    }

    #[test]
    fn a_pending_token_admits_its_first_address_only_and_a_consumed_one_nothing() {
        let mut h = Handshakes::<u8>::new(2);
        assert_eq!(h.remember_token([1; 16], 10, 1000, 0), Ok(()));
        assert_eq!(
            h.remember_token([1; 16], 10, 1000, 0),
            Ok(()),
            "retransmitted"
        );
        assert_eq!(
            h.remember_token([1; 16], 11, 1000, 0),
            Err(TokenRefusal::OtherAddress)
        );
        h.consume(&[1; 16]);
        for from in [10, 11, 12] {
            assert_eq!(h.check_token(&[1; 16], &from), Err(TokenRefusal::Consumed));
            assert_eq!(
                h.remember_token([1; 16], from, 1000, 0),
                Err(TokenRefusal::Consumed)
            );
        }
        // Expired tokens are forgotten.
        h.expire(Time::ZERO, 999);
        assert_eq!(h.tokens_len(), 1, "one second before its expiry");
        h.expire(Time::ZERO, 1000);
        assert_eq!(h.tokens_len(), 0);
    }

    #[test]
    fn a_full_history_refuses_new_tokens_and_never_evicts_a_live_one() {
        let mut h = Handshakes::<u8>::new(1); // 8 tokens
        for i in 0..8u8 {
            assert_eq!(h.remember_token([i; 16], i, 1000 + u64::from(i), 0), Ok(()));
        }
        h.consume(&[0; 16]);
        for i in 8..200u8 {
            assert_eq!(
                h.remember_token([i; 16], i, 5000, 0),
                Err(TokenRefusal::Full),
                "token {i}"
            );
        }
        assert_eq!(h.tokens_len(), 8);
        // The consumed token (the soonest to expire) is still refused from anywhere.
        assert_eq!(h.check_token(&[0; 16], &0), Err(TokenRefusal::Consumed));
        assert_eq!(h.check_token(&[0; 16], &99), Err(TokenRefusal::Consumed));
        // Once it expires, it is forgotten and a new token takes its place.
        assert_eq!(h.remember_token([200; 16], 200, 5000, 1000), Ok(()));
        assert_eq!(h.tokens_len(), 8);
        assert_eq!(
            h.remember_token([201; 16], 201, 5000, 1000),
            Err(TokenRefusal::Full),
            "the other seven live on"
        );
    }

    #[test]
    fn a_history_of_no_entries_refuses_every_token() {
        let mut h = Handshakes::<u8>::new(0);
        assert_eq!(
            h.remember_token([1; 16], 1, 1000, 0),
            Err(TokenRefusal::Full)
        );
    }

    #[test]
    fn handshakes_are_bounded_and_expire_from_their_first_request() {
        let mut h = Handshakes::<u8>::new(2);
        assert_eq!(
            h.start(1, pending(1, 1, at(0.0)), at(0.0), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(2, pending(2, 2, at(0.0)), at(0.0), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(3, pending(3, 3, at(0.5)), at(0.5), 0),
            HandshakeStart::Busy,
            "full of handshakes within their grace"
        );
        // A retransmitted request keeps its handshake and does not extend it.
        assert_eq!(
            h.start(2, pending(2, 2, at(4.0)), at(4.0), 0),
            HandshakeStart::Started
        );
        assert!(h.pending(&2, at(4.9), 0).is_some());
        assert!(
            h.pending(&2, at(5.0), 0).is_none(),
            "5 s from the first request"
        );
        assert!(h.pending(&1, at(1.0), 1000).is_none(), "token expired");
        assert!(
            h.pending(&1, Time::from_secs_f64(-1.0), 0).is_none(),
            "clock back"
        );
        assert_eq!(
            h.start(3, pending(3, 3, at(5.0)), at(5.0), 0),
            HandshakeStart::Started,
            "the expired ones made room"
        );
        assert_eq!(h.pending_len(), 1);
        assert!(h.finish(&3).is_some());
        assert!(h.finish(&3).is_none());
        assert_eq!(h.limits(), (2, 16));
    }

    #[test]
    fn a_full_table_replaces_the_first_handshake_once_its_grace_is_over() {
        let mut h = Handshakes::<u8>::new(2);
        assert_eq!(
            h.start(1, pending(1, 1, at(0.0)), at(0.0), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(2, pending(2, 2, at(0.2)), at(0.2), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(3, pending(3, 3, at(0.99)), at(0.99), 0),
            HandshakeStart::Busy
        );
        assert_eq!(
            h.start(3, pending(3, 3, at(1.0)), at(1.0), 0),
            HandshakeStart::Replaced
        );
        assert!(h.pending(&1, at(1.0), 0).is_none(), "the first one went");
        assert!(h.pending(&2, at(1.0), 0).is_some());
        // Address 1 comes back: 2 is past its grace, 3 is not.
        assert_eq!(
            h.start(1, pending(1, 1, at(1.3)), at(1.3), 0),
            HandshakeStart::Replaced
        );
        assert!(h.pending(&2, at(1.3), 0).is_none());
        assert!(h.pending(&3, at(1.3), 0).is_some());
        assert_eq!(
            h.start(2, pending(2, 2, at(1.5)), at(1.5), 0),
            HandshakeStart::Busy
        );
        assert_eq!(h.pending_len(), 2);
    }

    #[test]
    fn handshakes_started_at_the_same_instant_are_replaced_by_client_id() {
        for order in [[1u8, 2, 3], [3, 2, 1], [2, 3, 1]] {
            let mut h = Handshakes::<u8>::new(3);
            for from in order {
                let started = h.start(from, pending(from, u64::from(from), at(0.0)), at(0.0), 0);
                assert_eq!(started, HandshakeStart::Started);
            }
            assert_eq!(
                h.start(9, pending(9, 9, at(2.0)), at(2.0), 0),
                HandshakeStart::Replaced
            );
            assert!(
                h.pending(&1, at(2.0), 0).is_none(),
                "the smallest client id went"
            );
            assert!(h.pending(&2, at(2.0), 0).is_some());
            assert!(h.pending(&3, at(2.0), 0).is_some());
        }
    }

    #[test]
    fn one_client_id_holds_one_handshake() {
        let mut h = Handshakes::<u8>::new(4);
        assert_eq!(
            h.start(1, pending(1, 7, at(0.0)), at(0.0), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(2, pending(2, 7, at(0.1)), at(0.1), 0),
            HandshakeStart::Started
        );
        assert!(h.pending(&1, at(0.1), 0).is_none(), "the newer request won");
        assert!(h.pending(&2, at(0.1), 0).is_some());
        // A new token of the same client from the same address replaces it too.
        assert_eq!(
            h.start(2, pending(3, 7, at(0.2)), at(0.2), 0),
            HandshakeStart::Started
        );
        assert_eq!(h.pending(&2, at(0.2), 0).map(|p| p.tag), Some([3; 16]));
        assert_eq!(h.pending_len(), 1);
        assert_eq!(h.by_client.len(), 1);
        // Another client id from the same address replaces it as well; the index
        // follows.
        assert_eq!(
            h.start(2, pending(4, 8, at(0.3)), at(0.3), 0),
            HandshakeStart::Started
        );
        assert_eq!(h.by_client.get(&7), None);
        assert_eq!(h.by_client.get(&8), Some(&2));
        h.expire(at(10.0), 0);
        assert_eq!((h.pending_len(), h.by_client.len()), (0, 0));
    }

    // The tests below were written for mutants that survived `cargo mutants` (see
    // CONTRIBUTING.md, "Mutation testing"): each names the mutation it kills.

    /// Kills `228:46 replace && with ||`: a new token from an address that already
    /// has a handshake replaces that handshake in place, even in a full table; it
    /// must not push out another address's handshake.
    #[test]
    fn a_new_token_from_a_pending_address_in_a_full_table_replaces_its_own_handshake() {
        let mut h = Handshakes::<u8>::new(2);
        assert_eq!(
            h.start(2, pending(2, 2, at(0.0)), at(0.0), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(1, pending(1, 1, at(0.1)), at(0.1), 0),
            HandshakeStart::Started
        );
        // Both are past their grace; 2 started first.
        assert_eq!(
            h.start(1, pending(9, 1, at(2.0)), at(2.0), 0),
            HandshakeStart::Started,
            "its own handshake, replaced in place"
        );
        assert_eq!(h.pending(&1, at(2.0), 0).map(|p| p.tag), Some([9; 16]));
        assert!(h.pending(&2, at(2.0), 0).is_some(), "the other one stays");
        assert_eq!((h.pending_len(), h.by_client.len()), (2, 2));
    }

    /// Kills `267:51 replace == with !=` in `remove`: a finished handshake leaves no
    /// index entry behind, so the client id's next handshake does not end the one
    /// another client started from the same address since.
    #[test]
    fn a_finished_handshake_leaves_no_index_entry() {
        let mut h = Handshakes::<u8>::new(4);
        assert_eq!(
            h.start(1, pending(1, 7, at(0.0)), at(0.0), 0),
            HandshakeStart::Started
        );
        assert!(h.finish(&1).is_some());
        assert_eq!((h.pending_len(), h.by_client.len()), (0, 0));
        // Address 1 now holds client 8's handshake; client 7 comes from address 2.
        assert_eq!(
            h.start(1, pending(2, 8, at(0.1)), at(0.1), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(2, pending(3, 7, at(0.2)), at(0.2), 0),
            HandshakeStart::Started
        );
        assert_eq!(h.pending(&1, at(0.2), 0).map(|p| p.client_id), Some(8));
        assert_eq!(h.pending(&2, at(0.2), 0).map(|p| p.client_id), Some(7));
        assert_eq!(h.by_client.len(), 2);
    }

    /// Kills `277:22 replace && with ||` in `expire_pending` (and `277:16 delete !`,
    /// which other tests also catch): expiring handshakes keeps the index entries of
    /// the live ones, so a live client id still holds one handshake only.
    #[test]
    fn expiring_keeps_the_index_of_live_handshakes() {
        let mut h = Handshakes::<u8>::new(4);
        assert_eq!(
            h.start(1, pending(1, 7, at(0.0)), at(0.0), 0),
            HandshakeStart::Started
        );
        assert_eq!(
            h.start(2, pending(2, 8, at(3.0)), at(3.0), 0),
            HandshakeStart::Started
        );
        h.expire(at(5.0), 0); // 1 is 5 s old: expired; 2 lives on.
        assert_eq!(h.pending_len(), 1);
        assert_eq!(h.by_client.get(&7), None);
        assert_eq!(h.by_client.get(&8), Some(&2));
        // Client 8 again from address 3: its handshake at address 2 ends.
        assert_eq!(
            h.start(3, pending(3, 8, at(5.1)), at(5.1), 0),
            HandshakeStart::Started
        );
        assert!(h.pending(&2, at(5.1), 0).is_none());
        assert_eq!(h.pending_len(), 1);
    }

    fn secs(t: f64) -> Time {
        Time::from_secs_f64(t)
    }

    #[test]
    fn a_foreign_protocol_is_logged_once_per_address_per_quiet_time() {
        let mut log = ForeignProtocolLog::new(secs(0.0));
        assert_eq!(log.admit(secs(0.0), 1u32), Some(0));
        // The same address again, within 10 s: suppressed, counted.
        assert_eq!(log.admit(secs(0.5), 1), None);
        assert_eq!(log.admit(secs(9.9), 1), None);
        // Another address is logged, with what was suppressed since the last line.
        assert_eq!(log.admit(secs(9.9), 2), Some(2));
        // After the quiet time, the first address again.
        assert_eq!(log.admit(secs(10.0), 1), Some(0));
        assert_eq!(log.admit(secs(10.1), 1), None);
    }

    #[test]
    fn a_flood_from_many_addresses_is_capped_per_window_and_takes_no_memory() {
        let mut log = ForeignProtocolLog::new(secs(0.0));
        let size = core::mem::size_of_val(&log);
        let logged = (0..10_000u32)
            .filter(|&a| log.admit(secs(f64::from(a) * 1e-4), a).is_some())
            .count();
        // 10,000 addresses in one second: the window's 5 lines.
        assert_eq!(logged, FOREIGN_PROTOCOL_LINES as usize);
        assert_eq!(log.suppressed, 10_000 - 5);
        assert_eq!(core::mem::size_of_val(&log), size);
        // The next window logs again, and reports the suppressed count.
        assert_eq!(log.admit(secs(10.5), 20_000), Some(9_995));
        // The table holds the last 16 addresses logged: an old one is forgotten.
        for a in 0..FOREIGN_PROTOCOL_ADDRESSES as u32 {
            log.admit(secs(30.0 + f64::from(a)), 100 + a);
            log.lines = 0;
        }
        assert!(log.recent.iter().flatten().all(|&(a, _)| a >= 100));
    }

    #[test]
    fn a_clock_that_goes_back_restarts_the_window() {
        let mut log = ForeignProtocolLog::new(secs(100.0));
        for a in 0..5u32 {
            assert!(log.admit(secs(100.0), a).is_some());
        }
        assert_eq!(log.admit(secs(100.0), 9), None, "the window is full");
        assert_eq!(log.admit(secs(50.0), 9), Some(1), "a new window");
        // Address 0, logged at 100 s "in the future", is not quiet at 50 s.
        assert_eq!(log.admit(secs(50.0), 0), Some(0));
    }
}
