//! The socket seam of the UDP transports: where a link conditioner (feature
//! `conditioner`) sits between the socket and the stack. Without the feature, or
//! without a conditioner, datagrams pass straight through.

use std::net::SocketAddr;

use crate::Time;

#[cfg(feature = "conditioner")]
use super::conditioner::{Conditioner, ConditionerConfig, ConditionerStats};

/// Between a transport's socket and its stack: passes datagrams through, or through
/// a conditioner.
#[derive(Debug, Default)]
pub(crate) struct Seam {
    #[cfg(feature = "conditioner")]
    conditioner: Option<Conditioner<SocketAddr>>,
}

impl Seam {
    /// The seam a transport starts with: with the feature, the conditioner of the
    /// environment variable, if any.
    pub(crate) fn new(side: &'static str) -> Result<Self, super::TransportError> {
        let _ = side;
        Ok(Self {
            #[cfg(feature = "conditioner")]
            conditioner: super::conditioner::from_env(side)?,
        })
    }

    /// `true` when a conditioner holds the datagrams.
    pub(crate) fn is_active(&self) -> bool {
        #[cfg(feature = "conditioner")]
        return self.conditioner.is_some();
        #[cfg(not(feature = "conditioner"))]
        false
    }

    /// A datagram received at `now`: handed to `deliver` at once, or held.
    pub(crate) fn receive(
        &mut self,
        now: Time,
        from: SocketAddr,
        datagram: &[u8],
        mut deliver: impl FnMut(SocketAddr, &[u8]),
    ) {
        #[cfg(feature = "conditioner")]
        if let Some(c) = &mut self.conditioner {
            return c.receive(now, from, datagram);
        }
        let _ = now;
        deliver(from, datagram);
    }

    /// Hands the held received datagrams due at `now` to `deliver`.
    pub(crate) fn release_received(
        &mut self,
        now: Time,
        mut deliver: impl FnMut(SocketAddr, &[u8]),
    ) {
        #[cfg(feature = "conditioner")]
        if let Some(c) = &mut self.conditioner {
            while let Some(d) = c.poll_receive(now) {
                deliver(d.addr, &d.bytes);
            }
        }
        let _ = (now, &mut deliver);
    }

    /// A datagram to send at `now`: handed to `send` at once, or held.
    pub(crate) fn send(
        &mut self,
        now: Time,
        to: SocketAddr,
        datagram: &[u8],
        mut send: impl FnMut(SocketAddr, &[u8]),
    ) {
        #[cfg(feature = "conditioner")]
        if let Some(c) = &mut self.conditioner {
            return c.send(now, to, datagram);
        }
        let _ = now;
        send(to, datagram);
    }

    /// Hands the held datagrams to send due at `now` to `send`.
    pub(crate) fn release_sends(&mut self, now: Time, mut send: impl FnMut(SocketAddr, &[u8])) {
        #[cfg(feature = "conditioner")]
        if let Some(c) = &mut self.conditioner {
            while let Some(d) = c.poll_send(now) {
                send(d.addr, &d.bytes);
            }
        }
        let _ = (now, &mut send);
    }

    /// Replaces the conditioner (`None`: none), logging an active one.
    #[cfg(feature = "conditioner")]
    pub(crate) fn set(&mut self, side: &'static str, config: Option<ConditionerConfig>) {
        if let Some(config) = &config {
            super::conditioner::log_active(side, config, "code");
        }
        self.conditioner = config.map(Conditioner::new);
    }

    /// The conditioner's counters, when there is one.
    #[cfg(feature = "conditioner")]
    pub(crate) fn stats(&self) -> Option<ConditionerStats> {
        self.conditioner.as_ref().map(Conditioner::stats)
    }
}
