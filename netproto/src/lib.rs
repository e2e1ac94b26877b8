//! netproto: the network protocol of real-time multiplayer games.
//!
//! Annotate message structs with `#[derive(NetMessage)]` and the range of every field;
//! the derive generates one serialize function that writes, reads and measures bits
//! with tight bounds, and rejects at compile time what it cannot honour. Under the
//! messages: channels (reliable and unreliable), packets with acks, encrypted netcode
//! 1.02 connections and a UDP transport, every layer sans-IO (you pass the time and
//! the datagrams) with the UDP one on top.
//!
//! # Quickstart
//!
//! A server and a client over UDP on 127.0.0.1, one reliable chat line each way (this
//! runs as a test; `cargo run --example minimal` is the same as a program):
//!
//! ```
//! use netproto::NetMessage;
//! use netproto::channel::ChannelId;
//! use netproto::transport::{Config, UdpClient, UdpServer};
//!
//! #[derive(NetMessage, Debug, Clone)]
//! struct Chat {
//!     #[net(max_len = 140)] // bytes of UTF-8, not characters
//!     text: String,
//! }
//!
//! #[derive(NetMessage, Debug, Clone)]
//! #[net(message_set)]
//! enum Msg {
//!     Chat(Chat),
//! }
//!
//! // Development tokens (a key compiled into the library): never ship them.
//! let mut server = UdpServer::<Msg>::bind_insecure_dev("127.0.0.1:0", Config::default())?;
//! let mut client = UdpClient::<Msg>::connect_insecure_dev(server.local_addr()?, 1, Config::default())?;
//! client.send(ChannelId::RELIABLE, Msg::Chat(Chat { text: "hello".into() }))?; // goes once connected
//! let reply = loop {
//!     // The game loop: update each side once per tick.
//!     server.update()?;
//!     client.update()?;
//!     let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
//!     for id in clients {
//!         while let Some(Msg::Chat(chat)) = server.receive(id, ChannelId::RELIABLE) {
//!             let text = format!("you said {}", chat.text);
//!             server.send(id, ChannelId::RELIABLE, Msg::Chat(Chat { text }))?;
//!         }
//!     }
//!     if let Some(Msg::Chat(reply)) = client.receive(ChannelId::RELIABLE) {
//!         break reply;
//!     }
//!     std::thread::sleep(std::time::Duration::from_millis(1));
//! };
//! assert_eq!(reply.text, "you said hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A real game's clients get their connect token from the game's backend
//! ([`netcode::generate_connect_token`], [`transport::UdpClient::connect`]); both
//! sides must be built with the same message set and channels ([`transport::Config`])
//! ([`protocol_id`]). [`transport::UdpServer::poll_event`] reports who joined and left.
//!
//! # The layers
//!
//! From the bits up; use the highest one that fits, and the ones below for a transport
//! of your own or for tests:
//!
//! | layer | what it is for |
//! |---|---|
//! | [`NetMessage`], [`Stream`], [`encode`]/[`decode`] | the wire format of one message, bit-tight and validated |
//! | [`MessageSet`], [`schema`] | the enum of every message a protocol sends; layouts and fingerprints ([`protocol_id`]) |
//! | [`packet`] | sequence numbers, acks, RTT and loss estimates, fragmentation over unreliable datagrams |
//! | [`channel`] | reliable-ordered and unreliable message channels and blocks packed into packets ([`channel::MessageLayer`]) |
//! | [`connection`] | netcode 1.02: connect tokens, encrypted sessions, client slots, keep-alives, timeouts, congestion avoidance |
//! | [`transport`] | the whole stack: [`transport::UdpServer`] and [`transport::UdpClient`] over a socket; [`transport::ServerStack`] and [`transport::ClientStack`] without one |
//! | `sim` (feature `sim`) | a deterministic lossy network on virtual time, for tests |
//! | `transport::conditioner` (feature `conditioner`) | loss, latency, jitter, duplicates, reordering and a bandwidth cap on the UDP transports' real socket, from code or `NETPROTO_CONDITIONER` |
//!
//! The `netproto-bevy` crate drives the UDP server and client from Bevy systems.
//!
//! # A 60 Hz game: the send rate
//!
//! Call `update` once per frame. Each update sends a packet when the message layer
//! has news (a message queued since the last packet), as often as the connection's
//! congestion mode allows ([`connection::CongestionConfig`]: by default the
//! article's `good_rate` of 30 and `bad_rate` of 10 packets per second, bad above an
//! RTT of 250 ms; a connection starts good), and acks alone 30 times a second when
//! it has none. With the defaults a 60 Hz game that sends its input every frame
//! sends a packet every other frame, two frames' messages in it. For a packet every
//! frame, start both sides from [`transport::Config::fast_paced`]; to cap the
//! bandwidth lower, set the rates of [`transport::Config`]'s `connection` on both
//! sides; a large download takes [`transport::Config::bulk`]:
//!
//! ```
//! use netproto::transport::{Config, UdpClient, UdpServer};
//! # #[derive(netproto::NetMessage, Debug, Clone)]
//! # #[net(message_set)]
//! # enum Msg { Ping(Ping) }
//! # #[derive(netproto::NetMessage, Debug, Clone)]
//! # struct Ping { tick: u32 }
//!
//! let mut config = Config::fast_paced(); // up to 64 packets a second: one per frame
//! config.connection.congestion.bad_rate = 15.0; // when the RTT says the link is congested
//!
//! let server = UdpServer::<Msg>::bind_insecure_dev("127.0.0.1:0", config.clone())?;
//! let client = UdpClient::<Msg>::connect_insecure_dev(server.local_addr()?, 1, config)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A mode's rate is a ceiling: a frame that comes a hair early (a jittery sleep)
//! skips its packet, so a loop paced by the wall clock sets `good_rate` a little
//! above its frame rate, as the fast-paced preset does.
//!
//! # Fast debug builds of your game
//!
//! Cargo builds dependencies in your `dev` profile unoptimized: encoding and sealing
//! packets then costs tens of times its release time (a 100 KB block took 40 ms to
//! encode). Optimize netproto and the crypto it uses in your game's `Cargo.toml`
//! (debug assertions and overflow checks stay on; your own crate stays fast to build):
//!
//! ```toml
//! [profile.dev.package.netproto]
//! opt-level = 2
//!
//! [profile.dev.package.chacha20poly1305]
//! opt-level = 3
//!
//! [profile.dev.package.chacha20]
//! opt-level = 3
//!
//! [profile.dev.package.poly1305]
//! opt-level = 3
//! ```
//!
//! Your message types are compiled in your crate: their derived code follows your
//! profile.
//!
//! # `max_len` counts bytes for strings
//!
//! `#[net(max_len = N)]` on a `String` bounds its UTF-8 encoding to `N` **bytes**
//! (`"héllo"` is 6); on a `Vec<T>`, to `N` elements. A longer value is an encode error
//! naming the field, never truncated; the derive sends the length in
//! `bits_required(0, N)` bits, then the string aligned to a byte.
//!
//! ```
//! # use netproto::NetMessage;
//! #[derive(NetMessage, Debug)]
//! struct Name {
//!     #[net(max_len = 5)]
//!     text: String,
//! }
//!
//! assert!(netproto::encode(&Name { text: "hello".into() }).is_ok()); // 5 bytes
//! assert!(netproto::encode(&Name { text: "héllo".into() }).is_err()); // 6 bytes
//! ```
//!
//! # Logging
//!
//! netproto reports what happens to connections through [`tracing`](https://docs.rs/tracing)
//! events; install any subscriber (`tracing-subscriber`'s `fmt`, Bevy's `LogPlugin`)
//! to see them, or enable the `log` feature to have them reach a `log` logger
//! (`env_logger` and friends) when no subscriber is set. Nothing is formatted when
//! no subscriber wants an event: each call site costs one check of a cached flag, and
//! compiling with one of `tracing`'s `max_level_*` or `release_max_level_*` features
//! in your game (`tracing = { version = "0.1", features = ["release_max_level_warn"] }`)
//! removes the ones below that level from the binary altogether.
//!
//! The events, their targets, messages and fields are stable (new fields may be
//! added). Every event has `side` (`"server"` or `"client"`) and `addr` (the peer's
//! address, `Debug`-formatted); `client` is the client's slot ([`connection::ClientId`]).
//!
//! | target | level | message | fields |
//! |---|---|---|---|
//! | `netproto::connection` | info | `connected` | `client`, `addr`, `user_id` (server: the token's client id), `max_clients` (client) |
//! | `netproto::connection` | info | `denied` | `addr`, `reason` ([`DenyReason::as_str`](connection::DenyReason::as_str): `server_full`); on a server, rate-limited with the drops |
//! | `netproto::connection` | info, warn | `disconnected` | `client` (unless the handshake never completed), `addr`, `reason` ([`DisconnectReason::as_str`](connection::DisconnectReason::as_str)); `warn` for `timed_out`, `no_reply`, `handshake_stalled`, `token_expired` and `protocol_error` |
//! | `netproto::connection` | info | `trying the token's next server` | (client) `failed` (the server given up), `reason` (`no_reply`, `handshake_stalled` or `server_full`), `next`, `token_address` |
//! | `netproto::connection` | warn | `request for protocol id X from ADDR, this server speaks Y ...` | (server) `protocol_id` (the request's), `ours`, `suppressed` (such requests not logged since the last line); at most once per address per 10 s and 5 lines per 10 s; counted in `requests_dropped_wrong_protocol` |
//! | `netproto::connection` | warn | `protocol error` | `client`, `addr`, `error` (what the peer did); a `disconnected` with `reason = "protocol_error"` follows |
//! | `netproto::congestion` | debug | `congestion mode changed` | `client`, `addr`, `mode` (`good`, `bad`), `rtt_ms`, `penalty_s`, `send_rate` (packets per second) |
//! | `netproto::drop` | debug | `dropped` | `addr`, `reason`, and `error` where there is one; rate-limited |
//! | `netproto::drop` | debug | `drop events suppressed` | `suppressed`: the drops not logged in the last second |
//! | `netproto::conditioner` | warn | `link conditioner active: ...` | `side`, `from` (`environment`, `code`), `outgoing`, `incoming`, `seed`; no `addr` (feature `conditioner` only) |
//!
//! A `dropped` event's `reason` names the counter it landed in: on a server, the
//! fields of [`connection::ServerStats`] without their `datagrams_dropped_` prefix
//! (`malformed`, `unexpected`, `unknown_address`, `unauthenticated`, `replayed`,
//! `by_endpoint`) and with `requests_dropped_`/`responses_dropped_` as `request_`/
//! `response_` (`request_expired`, `request_token_reused`, `response_invalid`, ...); on a client,
//! the same names plus `wrong_address` (a datagram from another address than the
//! server's); on both, `payload_refused` (the message layer had no room: the peer
//! resends) and `send_failed` (the socket refused a datagram, with `datagrams`).
//! Drops are logged at most ten a second by each server or client (its connection,
//! the message layer above it and its socket share one limit), so that a flood of hostile datagrams
//! costs a few lines; the counters count every one.
//!
//! # The guide
//!
//! The guide, `netproto/GUIDE.md` in the repository (reproduced in the [`guide`] module
//! of these docs): messages and their attributes, wire snapshots, message sets, delta
//! encoding, packets, channels, connecting with tokens, congestion, statistics, the
//! arena example and Bevy. The measurements, with the commands that reproduce them, are
//! in `BENCHMARKS.md` in the repository.
#![warn(missing_docs)]

mod bits;
pub mod channel;
mod codec;
pub mod connection;
pub mod delta;
mod error;
mod grow;
/// The wire codecs below the public API, for netproto's own tests (`internals` feature).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals;
mod message;
mod message_set;
pub mod netcode;
pub mod packet;
mod prefetch;
mod protocol_id;
mod quantize;
pub mod schema;
mod sequence;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
mod stream;
mod text_table;
mod time;
mod trace;
pub mod transport;
mod wire_view;

/// The guide (`netproto/GUIDE.md`): every layer from the user's side.
#[cfg(all(doc, not(doctest)))]
#[doc = include_str!("../GUIDE.md")]
pub mod guide {}

pub use bits::{bits_for_count, bits_required};
pub use codec::{decode, decode_prefix, encode, encode_into, measure};
pub use delta::NetDelta;
pub use error::{ErrorKind, StreamError};
pub use message_set::MessageSet;
pub use netproto_derive::NetMessage;
pub use protocol_id::{layer_fingerprint, protocol_id};
pub use quantize::Quantization;
pub use stream::{MeasureStream, NetMessage, Place, RangedInt, ReadStream, Stream, WriteStream};
pub use time::Time;
pub use wire_view::{WireField, WireView};

/// Support for derived code. Not public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use core::result::Result::{Err, Ok};
    pub use std::string::String;
    pub use std::vec::Vec;

    /// The larger of two sizes, usable in `const` (enum `MAX_BITS`).
    pub const fn max_usize(a: usize, b: usize) -> usize {
        if a > b { a } else { b }
    }

    /// The smaller of two sizes, usable in `const` (enum `MIN_BITS`).
    pub const fn min_usize(a: usize, b: usize) -> usize {
        if a < b { a } else { b }
    }
}
