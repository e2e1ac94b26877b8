//! [Bevy](https://bevy.org) plugins for [netproto]: a game server and a game client
//! over UDP, driven every frame.
//!
//! * [`ServerPlugin`] drives the [`NetServer`] resource (a
//!   [`UdpServer`]): connections and disconnections arrive as
//!   [`ServerConnectionEvent`] messages, what clients sent as [`FromClient`] messages;
//!   systems send with `ResMut<NetServer<M>>`.
//! * [`ClientPlugin`] drives the [`NetClient`] resource (a [`UdpClient`]):
//!   [`ClientConnectionEvent`] and [`FromServer`] messages; systems send with
//!   `ResMut<NetClient<M>>`.
//!
//! The plugins only register the messages and the systems: insert the resource when
//! the socket should open (at startup, or when the player presses "join"), remove it
//! to close it. Each frame the transport is updated once, in `PreUpdate`
//! ([`NetSystems::Receive`]: what arrived is read, so this frame's systems see it;
//! timeouts, keep-alives, acks and resends run), and flushed in `PostUpdate`
//! ([`NetSystems::Send`]: what this frame's systems queued goes out now, within the
//! connection's send rate, without a second update). Order your systems between the
//! two.
//!
//! ```no_run
//! use bevy_app::{App, ScheduleRunnerPlugin, Update};
//! use bevy_ecs::prelude::*;
//! use netproto::NetMessage;
//! use netproto::channel::ChannelId;
//! use netproto::transport::{Config, UdpServer, UdpServerEvent};
//! use netproto_bevy::{FromClient, NetServer, ServerConnectionEvent, ServerPlugin};
//!
//! #[derive(NetMessage, Debug, Clone)]
//! struct Chat {
//!     #[net(max_len = 140)]
//!     text: String,
//! }
//!
//! #[derive(NetMessage, Debug, Clone)]
//! #[net(message_set)]
//! enum Msg {
//!     Chat(Chat),
//! }
//!
//! /// Every chat line goes to every client.
//! fn relay(mut server: ResMut<NetServer<Msg>>, mut received: MessageReader<FromClient<Msg>>) {
//!     for FromClient { message, .. } in received.read() {
//!         let _ = server.broadcast(ChannelId::RELIABLE, message, |_, _| {});
//!     }
//! }
//!
//! fn joins(mut events: MessageReader<ServerConnectionEvent>) {
//!     for ServerConnectionEvent(event) in events.read() {
//!         if let UdpServerEvent::Connected { client, address, .. } = event {
//!             println!("{address} joined as {client:?}");
//!         }
//!     }
//! }
//!
//! let server = UdpServer::<Msg>::bind_insecure_dev("127.0.0.1:40000", Config::default())?;
//! App::new()
//!     .add_plugins(ScheduleRunnerPlugin::run_loop(std::time::Duration::from_secs_f64(1.0 / 60.0)))
//!     .add_plugins(ServerPlugin::<Msg>::default())
//!     .insert_resource(NetServer(server))
//!     .add_systems(Update, (joins, relay))
//!     .run();
//! # Ok::<(), netproto::transport::TransportError>(())
//! ```
//!
//! A socket error other than the transient ones the transport skips is logged
//! (`tracing`, target `netproto_bevy`, `error` level) and the frame goes on.
//!
//! The crate uses `bevy_app` and `bevy_ecs` only, without their default features, so
//! that it adds little to a build; it works the same inside a full `bevy` app of the
//! same version.

// Bevy system parameters (`ResMut<T>`, `MessageReader<T>`, `Query<T>`) are written
// without their lifetimes, as in Bevy's own documentation.
#![allow(elided_lifetimes_in_paths)]

use core::marker::PhantomData;

use bevy_app::{App, Plugin, PostUpdate, PreUpdate};
use bevy_derive::{Deref, DerefMut};
use bevy_ecs::prelude::*;
use netproto::MessageSet;
use netproto::channel::ChannelId;
use netproto::connection::ClientId;
use netproto::transport::{UdpClient, UdpClientEvent, UdpServer, UdpServerEvent};

/// A message set the plugins can carry: shared between systems, so `Send + Sync`.
pub trait NetMessages: MessageSet + Send + Sync + 'static {}

impl<M: MessageSet + Send + Sync + 'static> NetMessages for M {}

/// Where the plugins update the transport: order your systems after
/// [`Receive`](Self::Receive) (in `PreUpdate`) and before [`Send`](Self::Send) (in
/// `PostUpdate`), as the `Update` schedule is.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NetSystems {
    /// `PreUpdate`: the datagrams that arrived are read, events and messages written.
    Receive,
    /// `PostUpdate`: the messages queued this frame are sent (a flush, not a second
    /// update).
    Send,
}

/// The game server: a [`UdpServer`] as a resource. Dereferences to it: `send`,
/// `clients`, `stats`, `disconnect`... Insert it to open the socket (the
/// [`ServerPlugin`] drives it from then on), remove it to close (every client is
/// disconnected).
#[derive(Resource, Deref, DerefMut, Debug)]
pub struct NetServer<M: NetMessages>(pub UdpServer<M>);

/// A client connected to the [`NetServer`] or left it (with why).
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ServerConnectionEvent(pub UdpServerEvent);

/// A message a client sent, as the [`NetServer`]'s layer delivered it (in order on a
/// reliable-ordered channel).
#[derive(Message, Clone, Debug)]
pub struct FromClient<M: NetMessages> {
    /// Who sent it.
    pub client: ClientId,
    /// The channel it came on.
    pub channel: ChannelId,
    /// The message.
    pub message: M,
}

/// Drives the [`NetServer<M>`] resource (when there is one) every frame, and writes
/// [`ServerConnectionEvent`] and [`FromClient<M>`] messages; see the
/// [crate documentation](crate).
#[derive(Debug)]
pub struct ServerPlugin<M>(PhantomData<fn() -> M>);

impl<M> Default for ServerPlugin<M> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<M: NetMessages> Plugin for ServerPlugin<M> {
    fn build(&self, app: &mut App) {
        app.add_message::<ServerConnectionEvent>()
            .add_message::<FromClient<M>>()
            .add_systems(
                PreUpdate,
                server_receive::<M>
                    .in_set(NetSystems::Receive)
                    .run_if(resource_exists::<NetServer<M>>),
            )
            .add_systems(
                PostUpdate,
                server_send::<M>
                    .in_set(NetSystems::Send)
                    .run_if(resource_exists::<NetServer<M>>),
            );
    }
}

/// Updates the server, then writes its events and the messages every client's layer
/// delivered.
fn server_receive<M: NetMessages>(
    mut server: ResMut<NetServer<M>>,
    mut events: MessageWriter<ServerConnectionEvent>,
    mut received: MessageWriter<FromClient<M>>,
    mut clients: Local<Vec<(ClientId, usize)>>,
) {
    if let Err(error) = server.update() {
        tracing::error!(target: "netproto_bevy", side = "server", %error, "update failed");
    }
    events.write_batch(server.events().map(ServerConnectionEvent));
    clients.clear();
    clients.extend(
        server
            .clients()
            .filter_map(|(id, _)| Some((id, server.layer(id)?.config().channels.len()))),
    );
    for &(client, channels) in clients.iter() {
        for channel in (0..channels).map(ChannelId::new) {
            while let Some(message) = server.receive(client, channel) {
                received.write(FromClient {
                    client,
                    channel,
                    message,
                });
            }
        }
    }
}

/// Sends what the frame queued ([`UdpServer::flush`]: no second update).
fn server_send<M: NetMessages>(mut server: ResMut<NetServer<M>>) {
    server.flush();
}

/// The game client: a [`UdpClient`] as a resource (one connection attempt).
/// Dereferences to it: `send`, `state`, `stats`, `disconnect`... Insert it to connect
/// (the [`ClientPlugin`] drives it from then on); after a denial or a disconnection,
/// insert a new one to connect again.
#[derive(Resource, Deref, DerefMut, Debug)]
pub struct NetClient<M: NetMessages>(pub UdpClient<M>);

/// The [`NetClient`] connected, was denied, or was disconnected (with why).
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ClientConnectionEvent(pub UdpClientEvent);

/// A message the server sent, as the [`NetClient`]'s layer delivered it.
#[derive(Message, Clone, Debug)]
pub struct FromServer<M: NetMessages> {
    /// The channel it came on.
    pub channel: ChannelId,
    /// The message.
    pub message: M,
}

/// Drives the [`NetClient<M>`] resource (when there is one) every frame, and writes
/// [`ClientConnectionEvent`] and [`FromServer<M>`] messages; see the
/// [crate documentation](crate).
#[derive(Debug)]
pub struct ClientPlugin<M>(PhantomData<fn() -> M>);

impl<M> Default for ClientPlugin<M> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<M: NetMessages> Plugin for ClientPlugin<M> {
    fn build(&self, app: &mut App) {
        app.add_message::<ClientConnectionEvent>()
            .add_message::<FromServer<M>>()
            .add_systems(
                PreUpdate,
                client_receive::<M>
                    .in_set(NetSystems::Receive)
                    .run_if(resource_exists::<NetClient<M>>),
            )
            .add_systems(
                PostUpdate,
                client_send::<M>
                    .in_set(NetSystems::Send)
                    .run_if(resource_exists::<NetClient<M>>),
            );
    }
}

/// Updates the client, then writes its events and the messages its layer delivered.
fn client_receive<M: NetMessages>(
    mut client: ResMut<NetClient<M>>,
    mut events: MessageWriter<ClientConnectionEvent>,
    mut received: MessageWriter<FromServer<M>>,
) {
    if let Err(error) = client.update() {
        tracing::error!(target: "netproto_bevy", side = "client", %error, "update failed");
    }
    events.write_batch(client.events().map(ClientConnectionEvent));
    for channel in client.layer().config().ids() {
        while let Some(message) = client.receive(channel) {
            received.write(FromServer { channel, message });
        }
    }
}

/// Sends what the frame queued ([`UdpClient::flush`]: no second update).
fn client_send<M: NetMessages>(mut client: ResMut<NetClient<M>>) {
    client.flush();
}
