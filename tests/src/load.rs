//! The game load of the server benchmarks (`src/bin/server_load`, and the
//! deterministic `examples/server_tick_profile.rs`): its messages, channels, rates and
//! matches.

use netproto::NetMessage;
use netproto::channel::{ChannelConfig, LayerConfig};
use netproto::connection::ClientId;
use netproto_examples::game::{EntityId, EntityState, EntityUpdate, PlayerInput, Position};

/// Server and client ticks per second.
pub const TICK_HZ: u32 = 60;
/// A snapshot goes to every client every this many ticks (20 Hz).
pub const SNAPSHOT_EVERY: u64 = 3;
/// Clients per match: a client's reliable events are relayed to the others of its match.
pub const MATCH_SIZE: usize = 10;
/// Each client sends one reliable event every this many ticks (once a second), each
/// client at its own phase.
pub const EVENT_EVERY: u64 = 60;
/// Entities in a snapshot (about 300 bytes on the wire).
pub const SNAPSHOT_ENTITIES: usize = 28;

/// A reliable game event: relayed by the server to the sender's match.
#[derive(NetMessage, Debug, Clone, PartialEq)]
pub struct Event {
    /// The sending player (user id).
    #[net(bits = 16)]
    pub from: u16,
    /// The sender's event counter, from 0.
    pub seq: u32,
}

/// The world as the server sends it 20 times a second.
#[derive(NetMessage, Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The server tick.
    pub tick: u32,
    /// Every entity of the match.
    pub entities: [EntityUpdate; SNAPSHOT_ENTITIES],
}

/// Everything the load sends. The snapshot is held inline (boxing it would allocate
/// for every snapshot sent); the channels' queues are sized for it.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
#[allow(clippy::large_enum_variant)]
pub enum LoadMessage {
    /// A client's input, every tick, unreliable.
    Input(PlayerInput),
    /// A reliable event, once a second per client, relayed to its match.
    Event(Event),
    /// The server's snapshot, 20 Hz, unreliable.
    Snapshot(Snapshot),
}

/// netproto's channels for the load: reliable events (queues of 64: events are rare),
/// unreliable inputs and snapshots.
pub fn layer_config() -> LayerConfig {
    let mut reliable = ChannelConfig::reliable();
    reliable.send_queue_size = 64;
    reliable.receive_queue_size = 64;
    LayerConfig::with_channels(vec![reliable, ChannelConfig::unreliable()])
}

/// The input a client sends at `tick`.
pub fn input(user: usize, tick: u64) -> PlayerInput {
    let phase = (tick as f32 + user as f32) * 0.01;
    PlayerInput {
        tick: (tick % 64) as u8,
        buttons: (tick as u8).wrapping_mul(user as u8 | 1),
        aim_yaw: phase.sin() * 3.0,
        aim_pitch: phase.cos() * 1.5,
        move_x: ((tick / 7) % 15) as i8 - 7,
        move_y: ((tick / 11) % 15) as i8 - 7,
    }
}

/// The snapshot of server tick `tick`.
pub fn snapshot(tick: u64) -> Snapshot {
    let mut s = Snapshot {
        tick: tick as u32,
        entities: core::array::from_fn(|i| EntityUpdate {
            entity: EntityId(i as u16),
            position: Position {
                x: 0.0,
                y: 0.0,
                z: 0.0,
            },
            heading: 0.0,
            health: 100,
            state: EntityState::Idle,
        }),
    };
    advance(&mut s, tick);
    s
}

/// Moves the snapshot's entities to tick `tick` (no allocation).
pub fn advance(s: &mut Snapshot, tick: u64) {
    s.tick = tick as u32;
    for (i, e) in s.entities.iter_mut().enumerate() {
        let t = (tick as f32) * 0.02 + i as f32;
        e.position = Position {
            x: t.cos() * 500.0,
            y: t.sin() * 500.0,
            z: (i as f32) * 3.0,
        };
        e.heading = (t * 0.5).sin() * 3.0;
        e.health = ((tick + i as u64) % 101) as u8;
        e.state = match (tick / 30 + i as u64) % 4 {
            0 => EntityState::Idle,
            1 => EntityState::Moving {
                speed: (i % 16) as u8,
            },
            2 => EntityState::Attacking {
                target: EntityId(((i + 1) % SNAPSHOT_ENTITIES) as u16),
            },
            _ => EntityState::Dead {
                respawn_ticks: (tick % 300) as u16,
            },
        };
    }
}

/// The users of `user`'s match (itself included).
pub fn match_of(user: usize, clients: usize) -> core::ops::Range<usize> {
    let start = user / MATCH_SIZE * MATCH_SIZE;
    start..(start + MATCH_SIZE).min(clients)
}

/// Whether client `user` sends an event at client tick `tick`.
pub fn sends_event(user: usize, tick: u64) -> bool {
    (tick + user as u64 * 7).is_multiple_of(EVENT_EVERY)
}

/// Who is connected, as which user: what both servers of the load keep to relay a
/// client's events to its match.
#[derive(Debug)]
pub struct Roster {
    by_user: Vec<Option<ClientId>>,
    user_of: Vec<usize>,
    connected: Vec<ClientId>,
}

impl Roster {
    /// No one connected yet, of `clients` users.
    pub fn new(clients: usize) -> Self {
        Self {
            by_user: vec![None; clients],
            user_of: vec![usize::MAX; clients],
            connected: Vec::with_capacity(clients),
        }
    }

    /// `client` connected as user `user_id` (ignored outside the load's users and
    /// slots).
    pub fn connect(&mut self, client: ClientId, user_id: u64) {
        let (user, slot) = (user_id as usize, usize::from(client.0));
        if user < self.by_user.len() && slot < self.user_of.len() {
            self.by_user[user] = Some(client);
            self.user_of[slot] = user;
            self.connected.push(client);
        }
    }

    /// `client` disconnected.
    pub fn disconnect(&mut self, client: ClientId) {
        if let Some(i) = self.connected.iter().position(|&c| c == client) {
            self.connected.swap_remove(i);
            if let Some(slot) = self.by_user.get_mut(self.user_of[usize::from(client.0)]) {
                *slot = None;
            }
        }
    }

    /// The connected clients, in the order they connected (but for disconnections).
    pub fn connected(&self) -> &[ClientId] {
        &self.connected
    }

    /// The other connected clients of `client`'s match: where its events go.
    pub fn mates(&self, client: ClientId) -> impl Iterator<Item = ClientId> + '_ {
        let user = self
            .user_of
            .get(usize::from(client.0))
            .copied()
            .unwrap_or(usize::MAX);
        let users = if user < self.by_user.len() {
            match_of(user, self.by_user.len())
        } else {
            0..0
        };
        users.filter_map(move |mate| self.by_user[mate].filter(|_| mate != user))
    }
}

/// The load's world on the simulator: a server for `clients` clients and the clients,
/// each with a token for user `i` from a backend seeded with `seed`, and `server_load`'s
/// connection settings (`CongestionConfig::bulk()`: every 60 Hz input is a datagram).
/// The clients are nodes 1 to `clients`, the server node 0.
pub fn sim_world(
    clients: usize,
    seed: u64,
) -> (
    crate::sim_stack::SimServer<LoadMessage>,
    Vec<crate::sim_stack::SimClient<LoadMessage>>,
) {
    use crate::sim_stack::{SimBackend, SimClient, SimServer};
    use netproto::connection::{CongestionConfig, ConnectionConfig};
    use netproto::sim::NodeId;
    let layer = layer_config();
    let protocol_id = netproto::protocol_id::<LoadMessage>(&layer);
    let connection = || {
        let mut c = ConnectionConfig::new(protocol_id);
        c.congestion = CongestionConfig::bulk();
        c
    };
    let mut backend = SimBackend::new(protocol_id, seed);
    let server_node = NodeId(0);
    let mut config = backend.server_config(server_node);
    config.connection = connection();
    config.max_clients = clients;
    config.pending_handshakes = 256;
    let server = SimServer::new(server_node, config, layer.clone(), 0.0);
    let players = (0..clients)
        .map(|i| {
            let token = backend.token(i as u64, server_node);
            SimClient::new(
                NodeId(i as u32 + 1),
                server_node,
                connection(),
                &token,
                layer.clone(),
                0.0,
            )
        })
        .collect();
    (server, players)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roster_relays_to_the_connected_mates_of_a_match() {
        let mut roster = Roster::new(12);
        // Client slots in another order than users; user 20 is outside the load.
        for (slot, user) in [(0u16, 3u64), (1, 0), (2, 11), (3, 5), (4, 20)] {
            roster.connect(ClientId(slot), user);
        }
        assert_eq!(roster.connected().len(), 4);
        let mates = |r: &Roster, c: u16| r.mates(ClientId(c)).map(|m| m.0).collect::<Vec<_>>();
        // Users 0, 3 and 5 share the match 0..10; user 11 is alone in 10..12.
        assert_eq!(mates(&roster, 0), vec![1, 3]);
        assert_eq!(mates(&roster, 2), Vec::<u16>::new());
        roster.disconnect(ClientId(3));
        assert_eq!(mates(&roster, 1), vec![0]);
        assert_eq!(roster.connected().len(), 3);
    }
}
