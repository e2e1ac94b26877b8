//! A deterministic, seeded network simulator on virtual time.
//!
//! For soak tests, examples and benchmarks of sans-IO endpoints, and for users' own
//! tests: a [`Network`] carries datagrams between any number of nodes ([`NodeId`])
//! over links with latency, jitter, i.i.d. and bursty loss ([`GilbertElliott`]),
//! duplicates and reordering ([`LinkConfig`]), and keeps an oracle log of what was
//! actually delivered. Nothing reads a clock: the caller advances virtual time by
//! passing `now`.
//!
//! ```
//! use netproto::Time;
//! use std::time::Duration;
//! use netproto::packet::{Endpoint, EndpointConfig, Incoming};
//! use netproto::sim::{LinkConfig, Network, NodeId};
//!
//! let (a, b) = (NodeId(0), NodeId(1));
//! let mut net = Network::new(7);
//! net.set_link_both(a, b, LinkConfig::default().with_latency(Duration::from_millis(50)).with_loss(0.1));
//! let mut ea = Endpoint::new(EndpointConfig::default(), Time::ZERO).unwrap();
//! let mut eb = Endpoint::new(EndpointConfig::default(), Time::ZERO).unwrap();
//!
//! let mut acked = 0;
//! for tick in 0..600 {
//!     let now = Time::from_secs_f64(f64::from(tick) / 60.0);
//!     while let Some(d) = net.poll(now) {
//!         let endpoint = if d.to == a { &mut ea } else { &mut eb };
//!         if let Ok(r) = endpoint.receive(now, &d.payload).map(Incoming::accept) {
//!             if d.to == a {
//!                 acked += r.acks().len();
//!             }
//!         }
//!     }
//!     ea.send(now, b"from a", |dgram| { net.send(now, a, b, dgram); }).unwrap();
//!     eb.send(now, b"from b", |dgram| { net.send(now, b, a, dgram); }).unwrap();
//! }
//! assert!(acked > 400);
//! ```

mod link;
mod network;
mod rng;

#[cfg(feature = "conditioner")]
pub(crate) use link::{Fate, Link};
pub use link::{GilbertElliott, LinkConfig};
pub use network::{DatagramId, Delivery, Network, NetworkStats, NodeId, OracleRecord};
pub use rng::Rng;
