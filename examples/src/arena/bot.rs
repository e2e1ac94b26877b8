//! A bot client: sends its input every tick (unreliable) and chat now and then
//! (reliable), and checks that the chat relayed from the others arrives in order.

use std::net::SocketAddr;

use netproto::channel::ChannelId;
use netproto::connection::LinkStats;
use netproto::sim::{LinkConfig, Rng};
use netproto::transport::{UdpClient, UdpClientEvent};

use super::backend::Backend;

use super::link::{SimLink, WireStats};
use super::{ArenaError, RELIABLE, Tally, UNRELIABLE, chat_number};
use super::{ArenaMessage, ArenaView};
use crate::game::{ChatMessage, NaiveSize, PlayerInput, buttons};
use netproto::delta::SnapshotReceiver;

/// What a bot said it would say.
const LINES: [&str; 6] = [
    "gg",
    "nice shot",
    "rush B, no stopping",
    "need ammo at the north gate",
    "héllo wörld ✓",
    "rematch after this one?",
];

/// What a bot counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BotStats {
    /// Inputs queued (unreliable).
    pub inputs_sent: u64,
    /// Inputs the unreliable queue refused (full).
    pub inputs_refused: u64,
    /// Chat lines queued (reliable).
    pub chats_sent: u64,
    /// Chat lines of the other bots the server relayed to us.
    pub chats_received: u64,
    /// Relayed chat lines that were not the next one of their sender (from the first
    /// line of each sender that reached us: lines relayed before we joined are not
    /// ours; the server counts what it relayed to us, and the summary compares).
    pub out_of_order: u64,
    /// Match-phase events received (reliable).
    pub phases_received: u64,
    /// Snapshots of the entities applied (unreliable: each a delta against one this
    /// bot holds, or full).
    pub snapshots_received: u64,
    /// Snapshots refused by the receiver: older than the newest applied, or a delta
    /// against a snapshot this bot no longer holds (counted, never guessed).
    pub snapshots_refused: u64,
    /// Entities in the last snapshot applied.
    pub entities_seen: u64,
    /// What we sent, as netproto bits and naive bytes.
    pub sent: Tally,
    /// What we received, as netproto bits and naive bytes.
    pub received: Tally,
    /// When the connection ended, why (`None` while connected or never connected).
    pub ended: Option<String>,
    /// `true` once the handshake completed.
    pub connected: bool,
}

/// One live line of a bot: the client side of its connection.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BotLive {
    /// The connection's statistics (RTT, loss, bandwidth, congestion), when
    /// connected.
    pub stats: Option<LinkStats>,
}

/// A bot: a [`UdpClient`] behind its own [`SimLink`].
#[derive(Debug)]
pub struct Bot {
    index: u8,
    client: UdpClient<ArenaMessage>,
    snapshots: SnapshotReceiver<ArenaView>,
    link: SimLink,
    rng: Rng,
    stick: (i8, i8),
    yaw: f32,
    tick: u64,
    /// Per sender, the next chat number we expect; `None` until its first line
    /// reaches us (lines relayed before we joined never will).
    next_chat: Vec<Option<u64>>,
    stats: BotStats,
}

impl Bot {
    /// Bot `index` (0..=63), connecting to `server` through a link with `link`, with
    /// a token from `backend`.
    pub fn new(
        index: u8,
        server: SocketAddr,
        link: LinkConfig,
        seed: u64,
        backend: &mut Backend,
    ) -> Result<Self, ArenaError> {
        let link = SimLink::new(server, link, seed ^ 0x5151)?;
        let token = backend.token(link.address()?, server)?;
        let client = UdpClient::connect(&token, super::config())?;
        Ok(Self {
            index,
            client,
            snapshots: SnapshotReceiver::new(),
            link,
            rng: Rng::new(seed),
            stick: (0, 0),
            yaw: 0.0,
            tick: 0,
            next_chat: vec![None; 64],
            stats: BotStats::default(),
        })
    }

    /// The bot's slot number (its chat `from`).
    pub fn index(&self) -> u8 {
        self.index
    }

    /// The address the server sees for this bot.
    pub fn server_side_address(&self) -> Result<SocketAddr, ArenaError> {
        Ok(self.link.server_side_address()?)
    }

    /// What the bot counted.
    pub fn stats(&self) -> &BotStats {
        &self.stats
    }

    /// What its link carried.
    pub fn link_stats(&self) -> WireStats {
        self.link.stats()
    }

    /// The client side of the connection, for the live display.
    pub fn live(&self) -> BotLive {
        BotLive {
            stats: self.client.connection().stats(),
        }
    }

    /// `true` while connected.
    pub fn is_connected(&self) -> bool {
        self.client.is_connected()
    }

    /// `true` when every reliable message we sent was acked.
    pub fn is_drained(&self) -> bool {
        self.client.layer().send_queue_len(RELIABLE) == 0
    }

    /// Moves the packets: the link both ways, then the client.
    pub fn pump(&mut self) -> Result<(), ArenaError> {
        self.link.pump()?;
        self.client.update()?;
        while let Some(event) = self.client.poll_event() {
            match event {
                UdpClientEvent::Connected { .. } => self.stats.connected = true,
                UdpClientEvent::Disconnected { reason } => {
                    self.stats.ended = Some(format!("disconnected: {reason}"));
                }
                UdpClientEvent::Denied { reason } => {
                    self.stats.ended = Some(format!("denied: {reason}"));
                }
                _ => {}
            }
        }
        self.take_messages();
        Ok(())
    }

    /// One game tick: the input, and a chat line with probability `chat_chance`.
    pub fn tick(&mut self, chat_chance: f64) {
        self.tick += 1;
        if self.tick % 30 == 1 {
            self.stick = (self.rng.below(15) as i8 - 7, self.rng.below(15) as i8 - 7);
        }
        self.yaw += 0.02;
        if self.yaw > 3.1 {
            self.yaw = -3.1;
        }
        let fire = self.rng.chance(0.2);
        let input = ArenaMessage::Input(PlayerInput {
            tick: (self.tick % 64) as u8,
            buttons: if fire { buttons::FIRE } else { 0 } | buttons::SPRINT,
            aim_yaw: self.yaw,
            aim_pitch: 0.1,
            move_x: self.stick.0,
            move_y: self.stick.1,
        });
        self.send(UNRELIABLE, input);
        if self.rng.chance(chat_chance) {
            let line = LINES[self.rng.below(LINES.len() as u64) as usize];
            let text = format!("#{} {line}", self.stats.chats_sent);
            let chat = ArenaMessage::Chat(ChatMessage {
                from: self.index,
                text,
            });
            self.send(RELIABLE, chat);
        }
    }

    fn send(&mut self, channel: ChannelId, message: ArenaMessage) {
        let bits = netproto::measure(&message);
        let naive = message.naive_size();
        let is_input = channel == UNRELIABLE;
        match self.client.send(channel, message) {
            Ok(()) => {
                self.stats.sent.add(bits, naive);
                if is_input {
                    self.stats.inputs_sent += 1;
                } else {
                    self.stats.chats_sent += 1;
                }
            }
            // Only the unreliable queue can fill at this rate: the input is stale by the
            // time there is room, so it is dropped, as a game would.
            Err(_) if is_input => self.stats.inputs_refused += 1,
            Err(e) => self.stats.ended = Some(format!("send refused: {e}")),
        }
    }

    fn take_messages(&mut self) {
        while let Some(message) = self.client.receive(RELIABLE) {
            let bits = netproto::measure(&message);
            self.stats.received.add(bits, message.naive_size());
            match message {
                ArenaMessage::Chat(chat) => {
                    self.stats.chats_received += 1;
                    let expected = &mut self.next_chat[usize::from(chat.from)];
                    match (chat_number(&chat.text), *expected) {
                        (Some(n), None) => *expected = Some(n + 1),
                        (Some(n), Some(next)) if n == next => *expected = Some(n + 1),
                        _ => self.stats.out_of_order += 1,
                    }
                }
                ArenaMessage::Phase(_) => self.stats.phases_received += 1,
                _ => {}
            }
        }
        while let Some(message) = self.client.receive(UNRELIABLE) {
            let bits = netproto::measure(&message);
            self.stats.received.add(bits, message.naive_size());
            if let ArenaMessage::Snapshot(snapshot) = message {
                match self.snapshots.receive(&snapshot.bytes) {
                    Ok(_) => {
                        self.stats.snapshots_received += 1;
                        let seen = self.snapshots.latest().map_or(0, |(_, v)| v.len());
                        self.stats.entities_seen = seen as u64;
                    }
                    Err(_) => self.stats.snapshots_refused += 1,
                }
            }
        }
    }

    /// Disconnects (the disconnect packet goes out through the link at the next pumps).
    pub fn disconnect(&mut self) {
        self.client.disconnect();
    }
}
