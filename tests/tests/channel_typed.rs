//! Channels declared for message types: a typed handle takes only its type (the
//! compile-time refusal is the ui case `tests/ui/channel/send_on_wrong_type.rs`), an
//! untyped send of another type is refused at once naming both types, a value above
//! its declared `max_len` gets an error naming the field, its length and the limit,
//! and "use bulk" is suggested only when a block could hold the message. Every new
//! error's text is pinned by an insta snapshot.

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::{
    BlockConfig, Channel, ChannelConfig, ChannelId, ChannelSendError, Encoded, LayerConfig,
    LayerConfigError, MessageLayer,
};
use netproto::connection::ConnectionConfig;
use netproto::packet::Sequence;
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto::transport::SendError;
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer, deliver};

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Input {
    #[net(range = 0..=15)]
    buttons: u8,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Chat {
    #[net(max_len = 140)]
    text: String,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Map {
    #[net(max_len = 2_000_000)]
    bytes: Vec<u8>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Scores {
    #[net(max_len = 4)]
    points: Vec<u16>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Input(Input),
    Chat(Chat),
    Map(Map),
    Scores(Scores),
}

/// Another set, for a declaration against the wrong one.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Other {
    Input(Input),
    Ping(Ping),
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Ping {
    #[net(range = 0..=3)]
    n: u8,
}

fn chat(text: &str) -> Msg {
    Msg::Chat(Chat { text: text.into() })
}

/// Channel 0 inputs only, 1 chat only, 2 chat and scores, 3 undeclared and small,
/// 4 bulk; and the typed handles of 0 and 1.
fn layer_config() -> (LayerConfig, Channel<Input>, Channel<Chat>) {
    let mut config = LayerConfig::with_channels(vec![]);
    let inputs = config.add_typed::<Msg, Input>(ChannelConfig::unreliable());
    let chat = config.add_typed::<Msg, Chat>(ChannelConfig::reliable());
    config.add(
        ChannelConfig::reliable()
            .carries::<Msg, Chat>()
            .carries::<Msg, Scores>(),
    );
    config.add(ChannelConfig::unreliable().with_max_message_bits(2000));
    config.add(ChannelConfig::bulk());
    (config, inputs, chat)
}

/// The text of an error, with its variant's debug form.
fn text(e: &ChannelSendError) -> String {
    format!("{e}\n  {e:?}\n")
}

#[test]
fn a_typed_handle_carries_its_type_end_to_end() {
    let (config, inputs, chat) = layer_config();
    assert_eq!(
        (inputs.id(), chat.id()),
        (ChannelId::new(0), ChannelId::new(1))
    );
    let mut a = MessageLayer::<Msg>::new(config.clone()).expect("valid");
    let mut b = MessageLayer::<Msg>::new(config).expect("valid");
    a.send_on(inputs, Input { buttons: 9 }).expect("queued");
    a.send_on(chat, Chat { text: "gg".into() }).expect("queued");
    let mut payload = Vec::new();
    a.write_packet(Time::ZERO, Sequence(0), &mut payload);
    b.read_packet(&payload).expect("valid payload");
    assert_eq!(
        b.receive(inputs.id()),
        Some(Msg::Input(Input { buttons: 9 }))
    );
    assert_eq!(b.receive(chat.id()), Some(chat_msg("gg")));
    assert_eq!(a.stats().messages_sent, 2);
}

fn chat_msg(text: &str) -> Msg {
    chat(text)
}

#[test]
fn a_handle_comes_only_from_a_channel_declared_for_exactly_that_type() {
    let (config, inputs, chat) = layer_config();
    assert_eq!(config.typed::<Msg, Input>(ChannelId::new(0)), Some(inputs));
    assert_eq!(config.typed::<Msg, Chat>(ChannelId::new(1)), Some(chat));
    // Another type, several types, no declaration, no such channel.
    assert_eq!(config.typed::<Msg, Chat>(ChannelId::new(0)), None);
    assert_eq!(config.typed::<Msg, Chat>(ChannelId::new(2)), None);
    assert_eq!(config.typed::<Msg, Chat>(ChannelId::new(3)), None);
    assert_eq!(config.typed::<Msg, Chat>(ChannelId::new(9)), None);
    // A type shared by two sets: declared for Msg's, not Other's.
    assert_eq!(config.typed::<Other, Input>(ChannelId::new(0)), None);
    let declared: Vec<_> = config.channels[2].carries.types().collect();
    assert_eq!(declared, ["Chat", "Scores"]);
    assert!(!config.channels[3].carries.is_declared());
}

#[test]
fn an_untyped_send_of_another_type_is_refused_at_once_naming_both_types() {
    let (config, _, _) = layer_config();
    let mut layer = MessageLayer::<Msg>::new(config).expect("valid");
    let mut errors = String::new();
    let wrong = [
        (ChannelId::new(0), chat("hello")),
        (ChannelId::new(1), Msg::Input(Input { buttons: 1 })),
        (ChannelId::new(2), Msg::Input(Input { buttons: 1 })),
        (ChannelId::new(0), Msg::Map(Map { bytes: vec![1; 3] })),
    ];
    for (channel, message) in wrong {
        let e = layer.send(channel, message).expect_err("wrong type");
        assert!(matches!(e, ChannelSendError::WrongType { .. }), "{e:?}");
        errors += &text(&e);
    }
    // The same refusal for a message encoded once (a broadcast's path).
    let scores = Msg::Scores(Scores { points: vec![3] });
    let encoded = Encoded::new(&scores)
        .expect("valid")
        .expect("bits that copy");
    let e = layer
        .send_encoded(ChannelId::new(0), &encoded)
        .expect_err("wrong type");
    errors += &text(&e);
    insta::assert_snapshot!(errors);
    // Nothing was queued or counted; the declared types go.
    assert_eq!(layer.stats().messages_sent, 0);
    assert_eq!(layer.send_queue_len(ChannelId::new(0)), 0);
    layer.send(ChannelId::new(2), chat("ok")).expect("chat");
    let scores = Msg::Scores(Scores { points: vec![1, 2] });
    layer.send(ChannelId::new(2), scores).expect("scores");
    layer
        .send_encoded(ChannelId::new(2), &encoded)
        .expect("scores");
    // An undeclared channel takes every type that fits it.
    layer
        .send(ChannelId::new(3), chat("any"))
        .expect("undeclared");
    layer
        .send(ChannelId::new(3), Msg::Input(Input { buttons: 2 }))
        .expect("undeclared");
    assert_eq!(layer.stats().messages_sent, 5);
}

#[test]
fn a_value_above_its_max_len_names_the_field_its_length_and_the_limit() {
    let (config, _, _) = layer_config();
    let mut layer = MessageLayer::<Msg>::new(config).expect("valid");
    let long = "x".repeat(300);
    let mut errors = String::new();
    // On a small channel (the measure is above its limit), on a roomy one (the write
    // catches it), on the bulk channel, and a sequence too long.
    let cases = [
        (ChannelId::new(3), chat(&long)),
        (ChannelId::new(1), chat(&long)),
        (ChannelId::new(4), chat(&long)),
        (
            ChannelId::new(2),
            Msg::Scores(Scores { points: vec![7; 5] }),
        ),
    ];
    for (channel, message) in cases {
        let e = layer.send(channel, message).expect_err("too long");
        assert!(
            matches!(e, ChannelSendError::ValueTooLong { field: Some(_), .. }),
            "{e:?}"
        );
        assert!(!e.to_string().contains("bulk"), "{e}");
        errors += &text(&e);
    }
    insta::assert_snapshot!(errors);
    assert_eq!(layer.stats().messages_sent, 0);
    // At the limit it goes.
    let full = "x".repeat(140);
    layer
        .send(ChannelId::new(1), chat(&full))
        .expect("at max_len");
    // Another value out of range is still Invalid, naming the field.
    let e = layer
        .send(ChannelId::new(0), Msg::Input(Input { buttons: 16 }))
        .expect_err("out of range");
    assert_eq!(
        e.to_string(),
        "message cannot be encoded: Input.buttons: value outside its declared range"
    );
}

#[test]
fn use_bulk_is_suggested_only_when_a_block_could_hold_the_message() {
    let (config, _, _) = layer_config();
    let mut layer = MessageLayer::<Msg>::new(config).expect("valid");
    let map = |n: usize| Msg::Map(Map { bytes: vec![0; n] });
    let mut errors = String::new();
    // Within bounds, too large for the small channel: a block would hold it.
    let e = layer
        .send(ChannelId::new(3), map(1000))
        .expect_err("too large");
    assert!(e.to_string().contains("ChannelConfig::bulk"), "{e}");
    errors += &text(&e);
    // 1.5 MB: within its bounds, above the bulk preset's largest block.
    let e = layer
        .send(ChannelId::new(3), map(1_500_000))
        .expect_err("too large");
    assert!(!e.to_string().contains("(ChannelConfig::bulk)"), "{e}");
    errors += &text(&e);
    let e = layer
        .send(ChannelId::new(4), map(1_500_000))
        .expect_err("too large");
    assert!(matches!(e, ChannelSendError::TooLarge { .. }), "{e:?}");
    errors += &text(&e);
    insta::assert_snapshot!(errors);
    // A block large enough takes it.
    let big = ChannelConfig::bulk().with_blocks(BlockConfig {
        max_block_size: 2 * 1024 * 1024,
        ..BlockConfig::bulk()
    });
    let mut layer = MessageLayer::<Msg>::new(LayerConfig::with_channels(vec![big])).expect("valid");
    layer
        .send(ChannelId::new(0), map(1_500_000))
        .expect("a 2 MiB block holds it");
    const { assert!(Map::MAX_BITS > 8 * 1_500_000) };
}

#[test]
fn a_declaration_the_layer_s_set_cannot_honour_is_a_configuration_error() {
    let foreign =
        LayerConfig::with_channels(vec![ChannelConfig::reliable().carries::<Other, Ping>()]);
    let e = MessageLayer::<Msg>::new(foreign).expect_err("another set");
    assert!(
        matches!(e, LayerConfigError::Carries { channel: 0, .. }),
        "{e:?}"
    );
    let mut errors = format!("{e}\n");
    // Ping is no payload of Msg (declared against Msg).
    let stranger =
        LayerConfig::with_channels(vec![ChannelConfig::reliable().carries::<Msg, Ping>()]);
    let e = MessageLayer::<Msg>::new(stranger).expect_err("not in the set");
    errors += &format!("{e}\n");
    insta::assert_snapshot!(errors);
    let mixed = LayerConfig::with_channels(vec![
        ChannelConfig::reliable()
            .carries::<Msg, Input>()
            .carries::<Other, Input>(),
    ]);
    assert!(
        MessageLayer::<Msg>::new(mixed).is_err(),
        "two sets on one channel"
    );
}

/// The transport's `send_on`: the server stack sends a chat on the typed chat channel
/// and the client receives it; the same send untyped on the input channel is refused
/// with the channel's error, on the simulator.
#[test]
fn the_transport_sends_on_a_typed_channel() {
    let (layer, inputs, chat) = layer_config();
    let mut net = Network::new(3);
    net.set_default_link(LinkConfig::PERFECT);
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, 8);
    let server_node = NodeId(0);
    let config = backend.server_config(server_node);
    let mut server = SimServer::<Msg>::new(server_node, config, layer.clone(), 0.0);
    let token = backend.token(1, server_node);
    let mut clients = [SimClient::<Msg>::new(
        NodeId(1),
        server_node,
        ConnectionConfig::new(protocol_id),
        &token,
        layer,
        0.0,
    )];
    let mut received = Vec::new();
    let mut sent = false;
    for tick in 0..120 {
        let now = f64::from(tick) / 60.0;
        deliver(&mut net, now, &mut server, &mut clients);
        let connected = server
            .connection()
            .clients()
            .next()
            .map(|(client, _)| client);
        if !sent && let Some(client) = connected {
            let stack = server.stack_mut();
            stack
                .send_on(
                    client,
                    chat,
                    Chat {
                        text: "welcome".into(),
                    },
                )
                .expect("queued");
            let e = stack
                .send(client, inputs.id(), chat_msg("nope"))
                .expect_err("wrong type");
            assert!(
                matches!(e, SendError::Channel(ChannelSendError::WrongType { .. })),
                "{e:?}"
            );
            sent = true;
        }
        while let Some(m) = clients[0].receive(chat.id()) {
            received.push(m);
        }
        server.update(now, &mut net);
        clients[0].update(now, &mut net);
    }
    assert!(sent);
    assert_eq!(received, [chat_msg("welcome")]);
}
