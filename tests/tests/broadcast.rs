//! Broadcast: one message to every client, encoded once. A
//! hand-written message set counts every time a message is written; twenty clients
//! on the simulator receive the broadcast.

use netproto::channel::ChannelId;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use netproto::channel::LayerConfig;
use netproto::connection::{ClientEvent, ConnectionConfig};
use netproto::schema::{IntType, Schema};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto::{MessageSet, NetMessage, Place, Stream};
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer, deliver};

/// Times a `Tick` was written (not measured, not read).
static WRITES: AtomicUsize = AtomicUsize::new(0);

/// A one-type message set written by hand, counting its writes.
#[derive(Debug, Clone, PartialEq)]
struct Tick(u32);

impl NetMessage for Tick {
    const MAX_BITS: usize = 32;
    const MIN_BITS: usize = 32;
    const SCHEMA: &'static Schema = &Schema::full_int(IntType::U32);
    fn blank() -> Self {
        Tick(0)
    }
    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        if S::IS_WRITING {
            WRITES.fetch_add(1, Ordering::Relaxed);
        }
        let mut v = u64::from(this.get().0);
        stream.serialize_bits(&mut v, 32)?;
        this.set(Tick(v as u32));
        Ok(())
    }
}

impl MessageSet for Tick {
    const COUNT: u32 = 1;
    const TYPE_BITS: u32 = 0;
    const MAX_PAYLOAD_BITS: usize = 32;
    fn type_id(&self) -> u32 {
        0
    }
    fn blank_of(type_id: u32) -> Option<Self> {
        (type_id == 0).then_some(Tick(0))
    }
}

const CLIENTS: usize = 20;

#[test]
fn a_broadcast_is_encoded_once_and_delivered_to_every_client() {
    let layer = LayerConfig::default();
    let protocol_id = netproto::protocol_id::<Tick>(&layer);
    let mut backend = SimBackend::new(protocol_id, 1);
    let server_node = NodeId(0);
    let mut config = backend.server_config(server_node);
    config.max_clients = CLIENTS;
    let mut server = SimServer::<Tick>::new(server_node, config, layer.clone(), 0.0);
    let mut clients: Vec<SimClient<Tick>> = (0..CLIENTS)
        .map(|i| {
            let token = backend.token(i as u64 + 1, server_node);
            SimClient::new(
                NodeId(i as u32 + 1),
                server_node,
                ConnectionConfig::new(protocol_id),
                &token,
                layer.clone(),
                0.0,
            )
        })
        .collect();
    let mut net = Network::new(2);
    net.set_default_link(
        LinkConfig::default()
            .with_latency(Duration::from_millis(20))
            .with_loss(0.05),
    );
    let mut connected = 0;
    let mut broadcast_at = None;
    let mut received = [[false; 2]; CLIENTS];
    for tick in 0..600u32 {
        let now = f64::from(tick) / 60.0;
        deliver(&mut net, now, &mut server, &mut clients);
        while server.poll_event().is_some() {}
        for (i, c) in clients.iter_mut().enumerate() {
            while let Some(event) = c.poll_event() {
                assert!(matches!(event, ClientEvent::Connected { .. }), "{event:?}");
                connected += 1;
            }
            // Channel 0 (reliable) and 1 (unreliable).
            for (channel, seen) in received[i].iter_mut().enumerate() {
                while let Some(m) = c.receive(ChannelId::new(channel)) {
                    assert_eq!(m, Tick(77 + channel as u32));
                    *seen = true;
                }
            }
        }
        if connected == CLIENTS && broadcast_at.is_none() {
            WRITES.store(0, Ordering::Relaxed);
            for channel in 0..2 {
                let queued = server
                    .stack_mut()
                    .broadcast(
                        ChannelId::new(channel),
                        &Tick(77 + channel as u32),
                        |id, e| panic!("{id:?}: {e}"),
                    )
                    .expect("valid");
                assert_eq!(queued, CLIENTS);
            }
            broadcast_at = Some(tick);
        }
        server.update(now, &mut net);
        for c in &mut clients {
            c.update(now, &mut net);
        }
    }
    assert!(broadcast_at.is_some(), "every client connected");
    // Two broadcasts, each encoded once, whatever the number of clients and the
    // resends of the reliable one over a lossy link.
    assert_eq!(WRITES.load(Ordering::Relaxed), 2);
    let reliable = received.iter().filter(|r| r[0]).count();
    let unreliable = received.iter().filter(|r| r[1]).count();
    assert_eq!(reliable, CLIENTS, "the reliable broadcast reached everyone");
    assert!(
        unreliable >= CLIENTS - 3,
        "unreliable: {unreliable} of {CLIENTS}"
    );
    // The same messages sent one by one are written twice per client (checked at
    // send, written into a packet).
    WRITES.store(0, Ordering::Relaxed);
    let ids: Vec<_> = server.layers().map(|(id, _)| id).collect();
    for id in ids {
        server
            .layer_mut(id)
            .expect("connected")
            .send(ChannelId::new(1), Tick(1))
            .expect("room");
    }
    server.update(11.0, &mut net);
    assert_eq!(WRITES.load(Ordering::Relaxed), 2 * CLIENTS);
}

#[test]
fn strings_are_cloned_per_client_not_copied() {
    use netproto::channel::Encoded;
    #[derive(NetMessage, Debug, Clone, PartialEq)]
    struct Chat {
        #[net(max_len = 16)]
        text: String,
    }
    #[derive(NetMessage, Debug, Clone, PartialEq)]
    struct Score(#[net(range = 0..=9)] u8);
    #[derive(NetMessage, Debug, Clone, PartialEq)]
    #[net(message_set)]
    enum Set {
        Chat(Chat),
        Score(Score),
    }
    let chat = Set::Chat(Chat {
        text: "hi".to_owned(),
    });
    // Its bits depend on where it starts (the string is byte-aligned).
    assert!(Encoded::new(&chat).expect("valid").is_none());
    // The set's other type is position free.
    assert!(
        Encoded::new(&Set::Score(Score(3)))
            .expect("valid")
            .is_some()
    );
}
