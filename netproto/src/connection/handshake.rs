//! What a server remembers of handshakes: the keys of handshakes in progress (by
//! address) and the connect tokens it has seen (by their tag). Both tables are
//! bounded by the configuration, allocated once, and hold nothing for a request that
//! failed a check.

use crate::Time;
use std::collections::HashMap;
use std::hash::Hash;

use crate::netcode::{Key, MAC_BYTES};

/// The tag of a connect token's sealed private part: its identity.
pub(crate) type TokenTag = [u8; MAC_BYTES];

/// A handshake in progress: the request's token opened and passed every check; the
/// client has been sent a challenge and must answer from the same address.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) send_key: Key,
    pub(crate) receive_key: Key,
    /// The connection timeout the token sets, seconds.
    pub(crate) timeout: f64,
    /// The token's expiry, Unix seconds: the handshake must complete before it.
    pub(crate) expire_timestamp: u64,
    pub(crate) tag: TokenTag,
    /// When the last request arrived (server time).
    last_seen: Time,
}

impl Pending {
    pub(crate) fn new(
        send_key: Key,
        receive_key: Key,
        timeout: f64,
        expire_timestamp: u64,
        tag: TokenTag,
        now: Time,
    ) -> Self {
        Self {
            send_key,
            receive_key,
            timeout,
            expire_timestamp,
            tag,
            last_seen: now,
        }
    }

    fn expired(&self, now: Time, unix: u64) -> bool {
        unix >= self.expire_timestamp || now.secs_since(self.last_seen) >= self.timeout
    }
}

#[derive(Clone, Copy, Debug)]
struct TokenEntry<A> {
    address: A,
    expire_timestamp: u64,
    /// Its session ended: the token opens nothing more.
    spent: bool,
}

/// Why a token is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenRefusal {
    /// First seen from another address.
    OtherAddress,
    /// Its session already ended.
    Spent,
    /// The table is full of live tokens.
    Full,
}

/// The handshake tables of a server.
#[derive(Debug)]
pub(crate) struct Handshakes<A> {
    pending: HashMap<A, Pending>,
    pending_limit: usize,
    tokens: HashMap<TokenTag, TokenEntry<A>>,
    token_limit: usize,
}

impl<A: Copy + Eq + Hash> Handshakes<A> {
    /// Tables for `pending_limit` handshakes in progress and eight times as many
    /// remembered tokens.
    pub(crate) fn new(pending_limit: usize) -> Self {
        let token_limit = pending_limit.saturating_mul(8);
        Self {
            pending: HashMap::with_capacity(pending_limit),
            pending_limit,
            tokens: HashMap::with_capacity(token_limit),
            token_limit,
        }
    }

    /// Whether a token seen before refuses `from`: first seen from another address,
    /// or its session ended. A lookup only: an unauthenticated request adds nothing.
    pub(crate) fn check_token(&self, tag: &TokenTag, from: &A) -> Result<(), TokenRefusal> {
        match self.tokens.get(tag) {
            Some(entry) if entry.address != *from => Err(TokenRefusal::OtherAddress),
            Some(entry) if entry.spent => Err(TokenRefusal::Spent),
            _ => Ok(()),
        }
    }

    /// Records an authenticated token as used from `from` (a no-op if it is already).
    /// When the table is full, expired tokens go first, then the one that expires
    /// soonest (which could then be used once more from a new address: the table
    /// bounds memory, and a server facing that many live tokens should have more).
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
        if self.token_limit == 0 {
            return Err(TokenRefusal::Full);
        }
        if self.tokens.len() >= self.token_limit {
            self.tokens.retain(|_, e| e.expire_timestamp > unix);
        }
        if self.tokens.len() >= self.token_limit {
            let soonest = self
                .tokens
                .iter()
                .min_by_key(|(_, e)| e.expire_timestamp)
                .map(|(tag, _)| *tag);
            if let Some(tag) = soonest {
                self.tokens.remove(&tag);
            }
        }
        self.tokens.insert(
            tag,
            TokenEntry {
                address: from,
                expire_timestamp,
                spent: false,
            },
        );
        Ok(())
    }

    /// The session of this token ended: it opens nothing more (until it expires and
    /// is forgotten, when the server refuses it as expired anyway).
    pub(crate) fn spend(&mut self, tag: &TokenTag) {
        if let Some(entry) = self.tokens.get_mut(tag) {
            entry.spent = true;
        }
    }

    /// Starts (or refreshes) the handshake of `from`. `false` when the table is full
    /// of live handshakes: the request is ignored, the client tries again.
    pub(crate) fn start(&mut self, from: A, pending: Pending, now: Time, unix: u64) -> bool {
        if !self.pending.contains_key(&from) && self.pending.len() >= self.pending_limit {
            self.pending.retain(|_, p| !p.expired(now, unix));
            if self.pending.len() >= self.pending_limit {
                return false;
            }
        }
        self.pending.insert(from, pending);
        true
    }

    /// The live handshake of `from`, if any.
    pub(crate) fn pending(&self, from: &A, now: Time, unix: u64) -> Option<&Pending> {
        self.pending.get(from).filter(|p| !p.expired(now, unix))
    }

    /// Ends the handshake of `from` (it connected).
    pub(crate) fn finish(&mut self, from: &A) -> Option<Pending> {
        self.pending.remove(from)
    }

    /// Forgets expired handshakes and tokens.
    pub(crate) fn expire(&mut self, now: Time, unix: u64) {
        self.pending.retain(|_, p| !p.expired(now, unix));
        self.tokens.retain(|_, e| e.expire_timestamp > unix);
    }

    /// Handshakes in progress.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Tokens remembered.
    pub(crate) fn tokens_len(&self) -> usize {
        self.tokens.len()
    }

    /// The most entries of each table.
    pub(crate) fn limits(&self) -> (usize, usize) {
        (self.pending_limit, self.token_limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(tag: u8, now: Time) -> Pending {
        Pending::new(
            Key::from_bytes([1; 32]),
            Key::from_bytes([2; 32]),
            5.0,
            1000,
            [tag; 16],
            now,
        )
    }

    #[test]
    fn a_token_is_bound_to_its_first_address_and_spent_once() {
        let mut h = Handshakes::<u8>::new(2);
        assert_eq!(h.remember_token([1; 16], 10, 1000, 0), Ok(()));
        assert_eq!(h.remember_token([1; 16], 10, 1000, 0), Ok(()));
        assert_eq!(
            h.remember_token([1; 16], 11, 1000, 0),
            Err(TokenRefusal::OtherAddress)
        );
        h.spend(&[1; 16]);
        assert_eq!(h.check_token(&[1; 16], &10), Err(TokenRefusal::Spent));
        // Expired tokens are forgotten.
        h.expire(Time::ZERO, 1000);
        assert_eq!(h.tokens_len(), 0);
    }

    #[test]
    fn the_token_table_is_bounded() {
        let mut h = Handshakes::<u8>::new(1); // 8 tokens
        for i in 0..20u8 {
            assert_eq!(h.remember_token([i; 16], i, 1000 + u64::from(i), 0), Ok(()));
            assert!(h.tokens_len() <= 8);
        }
        // The ones that expire soonest went first.
        assert_eq!(
            h.check_token(&[19; 16], &0),
            Err(TokenRefusal::OtherAddress)
        );
        assert_eq!(h.check_token(&[0; 16], &5), Ok(()));
    }

    #[test]
    fn pending_handshakes_are_bounded_and_expire() {
        let mut h = Handshakes::<u8>::new(2);
        assert!(h.start(1, pending(1, Time::ZERO), Time::ZERO, 0));
        assert!(h.start(2, pending(2, Time::ZERO), Time::ZERO, 0));
        assert!(
            !h.start(3, pending(3, Time::ZERO), Time::from_secs_f64(1.0), 0),
            "full of live handshakes"
        );
        assert!(
            h.start(
                2,
                pending(2, Time::from_secs_f64(1.0)),
                Time::from_secs_f64(1.0),
                0
            ),
            "a refresh always fits"
        );
        assert!(h.pending(&1, Time::from_secs_f64(4.9), 0).is_some());
        assert!(
            h.pending(&1, Time::from_secs_f64(5.0), 0).is_none(),
            "timed out"
        );
        assert!(
            h.pending(&2, Time::from_secs_f64(1.0), 1000).is_none(),
            "token expired"
        );
        assert!(
            h.start(
                3,
                pending(3, Time::from_secs_f64(5.0)),
                Time::from_secs_f64(5.0),
                0
            ),
            "the expired one made room"
        );
        assert_eq!(h.pending_len(), 2);
        assert!(h.finish(&3).is_some());
        assert_eq!(h.limits(), (2, 16));
    }
}
