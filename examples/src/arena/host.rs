//! The arena's game server: moves one entity per client from its inputs, relays chat
//! to everyone else (reliable), sends every client the entities at the snapshot rate
//! as delta snapshots (unreliable, tracked: each client's against the newest snapshot
//! it acked) and the match phase every two seconds (reliable).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use netproto::channel::ChannelId;
use netproto::connection::{ClientId, LinkStats};
use netproto::netcode::Key;
use netproto::transport::{UdpServer, UdpServerEvent};

use super::{ArenaError, RELIABLE, Tally, UNRELIABLE, chat_number};
use super::{ArenaMessage, ArenaView, EntityView, SNAPSHOT_BYTES, SnapshotBytes};
use crate::game::{
    EntityId, EntityState, EntityUpdate, GameMessage, MatchPhase, NaiveSize, PlayerInput, Position,
};
use netproto::delta::SnapshotSender;

/// Most clients: a chat line's `from` is 6 bits.
pub const MAX_CLIENTS: usize = 64;

/// What the server counted for one client address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientTally {
    /// Inputs received (unreliable).
    pub inputs_received: u64,
    /// Chat lines received (reliable).
    pub chats_received: u64,
    /// Chat lines that were not the sender's next one.
    pub out_of_order: u64,
    /// Snapshots of the entities queued for this client.
    pub snapshots_sent: u64,
    /// Of those, deltas (the others went full: no acked baseline yet).
    pub snapshots_delta: u64,
    /// Snapshots the unreliable queue refused (the client's link is too slow for the
    /// snapshot rate: the oldest state is not worth more than the next snapshot).
    pub snapshots_refused: u64,
    /// Chat lines relayed to this client.
    pub chats_relayed: u64,
    /// Match-phase events queued for this client.
    pub phases_sent: u64,
    /// Why the connection ended, when it did.
    pub ended: Option<String>,
}

/// The entity state a server sent, in bytes of messages (netproto bits rounded up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotBytesTally {
    /// As delta snapshots (each client's against its own acked baseline).
    pub delta: u64,
    /// As the arena sent it before: one `Update` message per entity per client.
    pub per_entity: u64,
}

/// One live line of a client, server side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientLive {
    /// The client's address.
    pub address: SocketAddr,
    /// Its connection's statistics (RTT, loss, bandwidth, congestion).
    pub stats: LinkStats,
}

#[derive(Clone, Copy, Debug)]
struct Entity {
    position: Position,
    heading: f32,
    speed: u8,
}

/// The arena server: a [`UdpServer`] and the game state.
#[derive(Debug)]
pub struct Host {
    server: UdpServer<ArenaMessage>,
    /// One delta sender per client.
    senders: BTreeMap<ClientId, SnapshotSender<ArenaView>>,
    /// The entity state sent: bytes as delta snapshots, and as one `Update` message
    /// per entity (what the arena sent before its snapshots were deltas).
    snapshot_bytes: SnapshotBytesTally,
    entities: BTreeMap<ClientId, Entity>,
    /// Per sender slot, the next chat number expected (reset when the slot changes
    /// hands).
    next_chat: BTreeMap<ClientId, u64>,
    tallies: BTreeMap<SocketAddr, ClientTally>,
    sent: Tally,
    tick: u64,
    round: u8,
    score: (u16, u16),
    ever_connected: bool,
}

impl Host {
    /// A server bound at `addr`, letting in the clients of the backend whose key is
    /// `private_key`.
    pub fn bind(addr: SocketAddr, private_key: Key) -> Result<Self, ArenaError> {
        let server = UdpServer::bind(addr, private_key, super::config())?;
        Ok(Self {
            server,
            entities: BTreeMap::new(),
            senders: BTreeMap::new(),
            snapshot_bytes: SnapshotBytesTally::default(),
            next_chat: BTreeMap::new(),
            tallies: BTreeMap::new(),
            sent: Tally::default(),
            tick: 0,
            round: 1,
            score: (0, 0),
            ever_connected: false,
        })
    }

    /// The address the server is bound to.
    pub fn address(&self) -> Result<SocketAddr, ArenaError> {
        Ok(self.server.local_addr()?)
    }

    /// What the server counted, by client address.
    pub fn tallies(&self) -> &BTreeMap<SocketAddr, ClientTally> {
        &self.tallies
    }

    /// What the server sent, as netproto bits and naive bytes.
    pub fn sent(&self) -> Tally {
        self.sent
    }

    /// Clients connected now.
    pub fn connected(&self) -> usize {
        self.server.connection().connected_clients()
    }

    /// `true` once a client connected, and none is connected any more.
    pub fn all_left(&self) -> bool {
        self.ever_connected && self.connected() == 0
    }

    /// `true` when every reliable message to every client was acked.
    pub fn is_drained(&self) -> bool {
        self.server.clients().all(|(id, _)| {
            self.server
                .layer(id)
                .is_none_or(|l| l.send_queue_len(RELIABLE) == 0)
        })
    }

    /// The server side of every connection, for the live display.
    pub fn live(&self) -> Vec<ClientLive> {
        let core = self.server.connection();
        self.server
            .clients()
            .filter_map(|(id, address)| {
                Some(ClientLive {
                    address,
                    stats: core.stats(id)?,
                })
            })
            .collect()
    }

    /// Moves the packets: reads, times out, sends; then takes what arrived.
    pub fn pump(&mut self) -> Result<(), ArenaError> {
        self.server.update()?;
        while let Some(event) = self.server.poll_event() {
            match event {
                UdpServerEvent::Connected {
                    client, address, ..
                } => {
                    self.ever_connected = true;
                    self.tallies.entry(address).or_default();
                    let spawn = f32::from(client.0) * 8.0 - 256.0;
                    self.entities.insert(
                        client,
                        Entity {
                            position: Position {
                                x: spawn,
                                y: -spawn,
                                z: 2.0,
                            },
                            heading: 0.0,
                            speed: 0,
                        },
                    );
                    self.next_chat.insert(client, 0);
                    self.senders.insert(client, SnapshotSender::new(0));
                }
                UdpServerEvent::Disconnected {
                    client,
                    address,
                    reason,
                } => {
                    self.entities.remove(&client);
                    self.senders.remove(&client);
                    self.next_chat.remove(&client);
                    self.tallies.entry(address).or_default().ended = Some(reason.to_string());
                }
                _ => {}
            }
        }
        self.take_messages();
        Ok(())
    }

    fn take_messages(&mut self) {
        let clients: Vec<(ClientId, SocketAddr)> = self.server.clients().collect();
        for &(id, address) in &clients {
            while let Some(message) = self.server.receive(id, UNRELIABLE) {
                if let ArenaMessage::Input(input) = message {
                    self.tallies.entry(address).or_default().inputs_received += 1;
                    if let Some(entity) = self.entities.get_mut(&id) {
                        steer(entity, &input);
                    }
                }
            }
            while let Some(message) = self.server.receive(id, RELIABLE) {
                let ArenaMessage::Chat(chat) = message else {
                    continue;
                };
                let tally = self.tallies.entry(address).or_default();
                tally.chats_received += 1;
                let expected = self.next_chat.entry(id).or_default();
                match chat_number(&chat.text) {
                    Some(n) if n == *expected => *expected += 1,
                    _ => tally.out_of_order += 1,
                }
                // Relayed as sent: the bots check the order per `from`.
                for &(to, to_address) in &clients {
                    if to != id {
                        let message = ArenaMessage::Chat(chat.clone());
                        if self.send(to, RELIABLE, message) {
                            self.tallies.entry(to_address).or_default().chats_relayed += 1;
                        }
                    }
                }
            }
        }
    }

    /// One game tick at `tick_rate`: the entities move; every `snapshot_every` ticks
    /// each client gets every entity; every two seconds, the match phase.
    pub fn tick(&mut self, tick_rate: f64, snapshot_every: u64) {
        self.tick += 1;
        let dt = 1.0 / tick_rate as f32;
        for entity in self.entities.values_mut() {
            advance(entity, dt);
        }
        let clients: Vec<(ClientId, SocketAddr)> = self.server.clients().collect();
        if self.tick.is_multiple_of(snapshot_every) {
            self.send_snapshots(&clients);
        }
        if self.tick.is_multiple_of((2 * tick_rate as u64).max(1)) {
            self.score.0 = (self.score.0 + (self.tick % 3) as u16).min(999);
            self.score.1 = (self.score.1 + (self.tick % 2) as u16).min(999);
            let phase = MatchPhase::Playing {
                round: self.round,
                red: self.score.0,
                blue: self.score.1,
            };
            for &(to, address) in &clients {
                if self.send(to, RELIABLE, ArenaMessage::Phase(phase.clone())) {
                    self.tallies.entry(address).or_default().phases_sent += 1;
                }
            }
        }
    }

    /// Every client gets every entity: a delta snapshot against the newest one it
    /// acked (the receipts of the tracked messages say which), or full.
    fn send_snapshots(&mut self, clients: &[(ClientId, SocketAddr)]) {
        let updates: Vec<EntityUpdate> = self
            .entities
            .iter()
            .map(|(id, e)| EntityUpdate {
                entity: EntityId(id.0),
                position: e.position,
                heading: e.heading,
                health: 100,
                state: if e.speed == 0 {
                    EntityState::Idle
                } else {
                    EntityState::Moving { speed: e.speed }
                },
            })
            .collect();
        let mut view = ArenaView::new();
        for u in &updates {
            let entity = EntityView {
                x: u.position.x,
                y: u.position.y,
                z: u.position.z,
                heading: u.heading,
                health: u.health,
                motion: u.state.into(),
            };
            // At most 64 clients, ids within 0..=4095: cannot fail.
            let _ = view.insert(u32::from(u.entity.0), entity);
        }
        // What the arena sent before: one `Update` message per entity.
        let per_entity_bits: usize = updates
            .iter()
            .map(|u| netproto::measure(&GameMessage::Update(u.clone())))
            .sum();
        let naive: usize = updates.iter().map(|u| 1 + u.naive_size()).sum();
        let mut buf = [0u8; SNAPSHOT_BYTES];
        for &(to, address) in clients {
            let Some(sender) = self.senders.get_mut(&to) else {
                continue;
            };
            while let Some(receipt) = self.server.poll_receipt(to, UNRELIABLE) {
                sender.receipt_acked(receipt);
            }
            // The view is within its declared bounds: cannot fail.
            let Ok(sent) = sender.encode_into(&view, &mut buf) else {
                continue;
            };
            let message = ArenaMessage::Snapshot(SnapshotBytes {
                bytes: buf[..sent.bytes].to_vec(),
            });
            let bits = netproto::measure(&message);
            let tally = self.tallies.entry(address).or_default();
            match self.server.send_tracked(to, UNRELIABLE, message) {
                Ok(receipt) => {
                    sender.sent_with(sent.sequence, receipt);
                    self.sent.add(bits, naive);
                    tally.snapshots_sent += 1;
                    tally.snapshots_delta += u64::from(sent.baseline.is_some());
                    self.snapshot_bytes.delta += bits.div_ceil(8) as u64;
                    self.snapshot_bytes.per_entity += per_entity_bits.div_ceil(8) as u64;
                }
                Err(_) => tally.snapshots_refused += 1,
            }
        }
    }

    /// The entity state sent so far: as delta snapshots, and as one message per
    /// entity.
    pub fn snapshot_bytes(&self) -> SnapshotBytesTally {
        self.snapshot_bytes
    }

    fn send(&mut self, to: ClientId, channel: ChannelId, message: ArenaMessage) -> bool {
        let bits = netproto::measure(&message);
        let naive = message.naive_size();
        let sent = self.server.send(to, channel, message).is_ok();
        if sent {
            self.sent.add(bits, naive);
        }
        sent
    }

    /// Disconnects every client (the disconnect packets go out now).
    pub fn disconnect_all(&mut self) {
        self.server.disconnect_all();
    }
}

/// The entity follows its input: the stick sets the velocity (up to 6 m/s, 9 when
/// sprinting), the aim sets the heading.
fn steer(entity: &mut Entity, input: &PlayerInput) {
    let sprint = input.buttons & crate::game::buttons::SPRINT != 0;
    let top = if sprint { 9.0 } else { 6.0 };
    let stick = f32::from(input.move_x.abs().max(input.move_y.abs())) / 7.0;
    entity.speed = (stick * top).round() as u8;
    entity.heading = input.aim_yaw;
    let (dx, dy) = (f32::from(input.move_x), f32::from(input.move_y));
    if dx != 0.0 || dy != 0.0 {
        // Within -pi..=pi: inside the heading's declared range.
        entity.heading = dy.atan2(dx);
    }
}

fn advance(entity: &mut Entity, dt: f32) {
    let step = f32::from(entity.speed) * dt;
    let p = &mut entity.position;
    p.x = (p.x + step * entity.heading.cos()).clamp(-1000.0, 1000.0);
    p.y = (p.y + step * entity.heading.sin()).clamp(-1000.0, 1000.0);
}
