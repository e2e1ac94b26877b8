//! The README's quickstart and the guide's (`netproto/GUIDE.md`) code, compiled and
//! run: keep them in sync.

use netproto::NetMessage;
use netproto::Time;
use netproto::internals::packet::next_header;

#[derive(NetMessage, Debug, PartialEq)]
struct PlayerInput {
    #[net(bits = 6)]
    tick: u8,
    #[net(range = 0..=100)]
    health: u8,
    #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))]
    yaw: f32,
    fire: bool,
    #[net(max_len = 140)]
    chat: String,
}

/// The guide's `input`.
fn readme_input() -> PlayerInput {
    PlayerInput {
        tick: 9,
        health: 97,
        yaw: 1.25,
        fire: true,
        chat: String::new(),
    }
}

#[test]
fn readme() -> Result<(), Box<dyn std::error::Error>> {
    let input = readme_input();
    let bytes = netproto::encode(&input)?;
    assert_eq!(bytes.len(), 5); // 35 bits, then the string's align
    let back: PlayerInput = netproto::decode(&bytes)?;
    let bits = netproto::measure(&input);
    assert_eq!(bits, 42); // the align is charged 7 bits
    assert_eq!((back.tick, back.health, back.fire), (9, 97, true));
    assert!((back.yaw - 1.25).abs() <= 0.0005);
    use netproto::packet::{Endpoint, EndpointConfig, Incoming};
    use std::time::Duration;
    let now = Time::ZERO; // your clock: seconds since your game started
    let mut a = Endpoint::new(EndpointConfig::default(), now)?;
    let mut b = Endpoint::new(EndpointConfig::default(), now)?;
    let mut wire = Vec::new();
    let mut delivered = 0;
    a.send(now, b"hello", |datagram| wire.push(datagram.to_vec()))?;
    for datagram in &wire {
        if let Incoming::Packet(packet) = b.receive(now + Duration::from_millis(50), datagram)? {
            if packet.payload() == b"hello" {
                let _acks = packet.accept();
                delivered += 1;
            } else {
                packet.refuse();
            }
        }
    }
    assert_eq!(delivered, 1);
    assert_eq!(next_header(&b).ack_bits, 1);
    Ok(())
}

/// The guide's `WireView` sample is the view of its `PlayerInput`, as the code prints
/// it (`cargo test -p netproto-tests --test readme_examples -- --nocapture` prints it).
#[test]
fn readme_wire_view_sample() -> Result<(), Box<dyn std::error::Error>> {
    let mut input = readme_input();
    let view = netproto::WireView::of(&mut input)?.to_string();
    println!("{view}");
    let readme = include_str!("../../netproto/GUIDE.md");
    assert!(
        readme.contains(&format!("```text\n{view}```")),
        "the guide's WireView sample is not:\n{view}"
    );
    Ok(())
}

/// The README's Quickstart is the crate docs' (run there as a doctest), line for line.
#[test]
fn readme_quickstart_is_the_crate_docs() {
    let readme = include_str!("../../README.md");
    let quickstart = &readme[readme.find("## Quickstart").expect("a Quickstart")..];
    let block = rust_block(quickstart.lines());
    let lib = include_str!("../../netproto/src/lib.rs");
    let docs = &lib[lib.find("//! # Quickstart").expect("a Quickstart")..];
    let doc_block: Vec<&str> = rust_block(docs.lines().map(|l| {
        l.strip_prefix("//! ")
            .or_else(|| l.strip_prefix("//!"))
            .unwrap_or(l)
    }))
    .into_iter()
    .filter(|l| !l.starts_with("# "))
    .collect();
    assert!(!block.is_empty());
    assert_eq!(block, doc_block);
}

/// The lines of the first Rust code block.
fn rust_block<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    lines
        .skip_while(|l| *l != "```rust" && *l != "```")
        .skip(1)
        .take_while(|l| *l != "```")
        .collect()
}

mod connecting {
    use netproto::NetMessage;
    use netproto::channel::ChannelId;
    use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token};
    use netproto::transport::{Config, UdpClient, UdpServer, UdpServerEvent};

    #[derive(NetMessage, Debug, Clone, PartialEq)]
    struct Chat {
        #[net(max_len = 140)]
        text: String,
    }

    #[derive(NetMessage, Debug, Clone, PartialEq)]
    #[net(message_set)]
    enum Msg {
        Chat(Chat),
    }

    /// The guide's "Connecting a client and a server", with a bound on the loop.
    #[test]
    fn readme_connecting() -> Result<(), Box<dyn std::error::Error>> {
        let private_key = Key::random();
        let config = Config::default();
        let mut server =
            UdpServer::<Msg>::bind("127.0.0.1:0", private_key.clone(), config.clone())?;
        let protocol_id = netproto::protocol_id::<Msg>(&config.channels);
        let params = TokenParams::new(protocol_id, 42, vec![server.local_addr()?]);
        let unix_time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs();
        let bytes = generate_connect_token(&params, &private_key, unix_time)?.write()?;
        let token = ConnectToken::read(&bytes)?;
        let mut client = UdpClient::<Msg>::connect(&token, config)?;
        client.send(
            ChannelId::RELIABLE,
            Msg::Chat(Chat {
                text: "hello".into(),
            }),
        )?;
        let mut joined = 0;
        let mut ticks = 0;
        let echo = loop {
            ticks += 1;
            assert!(ticks < 2000, "no echo within 10 s");
            client.update()?;
            server.update()?;
            while let Some(event) = server.poll_event() {
                if let UdpServerEvent::Connected {
                    client,
                    address,
                    user_id,
                } = event
                {
                    println!("player {user_id} joined from {address} as {client:?}");
                    assert_eq!(user_id, 42);
                    joined += 1;
                }
            }
            let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
            for id in clients {
                while let Some(Msg::Chat(chat)) = server.receive(id, ChannelId::RELIABLE) {
                    server.send(id, ChannelId::RELIABLE, Msg::Chat(chat))?;
                }
            }
            if let Some(Msg::Chat(echo)) = client.receive(ChannelId::RELIABLE) {
                break echo;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(echo.text, "hello");
        assert_eq!(joined, 1);
        client.disconnect();
        for _ in 0..200 {
            server.update()?;
            if server.clients().next().is_none() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("the disconnect did not free the slot");
    }
}

/// The README's "Delta snapshots" example.
#[test]
fn readme_delta() -> Result<(), Box<dyn std::error::Error>> {
    use netproto::delta::{NetDelta, decode_delta, encode_delta};

    #[derive(NetMessage, Clone, Debug, PartialEq)]
    #[net(delta)]
    struct Player {
        #[net(range = 0..=1000, delta = -15..=15)]
        x: u16,
        #[net(range = 0..=100)]
        health: u8,
        alive: bool,
    }

    let base = Player {
        x: 500,
        health: 100,
        alive: true,
    };
    let now = Player {
        x: 507,
        health: 100,
        alive: true,
    };
    // x changed by +7 (1 bit changed, a 5-bit difference code); the rest 1 bit each.
    assert_eq!(now.measure_delta(&base), 8);
    let bytes = encode_delta(&now, &base)?;
    assert_eq!(decode_delta(&bytes, &base)?, now);
    Ok(())
}

/// The guide's "Over the transports: receipts" code: the function between the markers
/// below is the guide's, line for line, and it compiles here.
mod receipts_guide {
    use netproto::NetMessage;

    #[derive(NetMessage, Clone, Debug, PartialEq)]
    #[net(delta)]
    struct View {
        #[net(range = 0..=1000, delta = -15..=15)]
        x: u16,
    }

    #[derive(NetMessage, Clone, Debug)]
    #[net(message_set)]
    enum Msg {
        Snapshot(SnapshotBytes),
    }

    // guide: begin
    use netproto::channel::ChannelId;
    use netproto::connection::ClientId;
    use netproto::delta::SnapshotSender;
    use netproto::transport::UdpServer;
    #[derive(NetMessage, Clone, Debug)]
    struct SnapshotBytes {
        #[net(max_len = 512)]
        bytes: Vec<u8>,
    }
    const SNAPSHOTS: ChannelId = ChannelId::UNRELIABLE;

    /// Once per snapshot tick, for each client (one sender per client).
    fn send_snapshot(
        server: &mut UdpServer<Msg>,
        client: ClientId,
        sender: &mut SnapshotSender<View>,
        view: &View,
    ) -> Result<(), Box<dyn std::error::Error>> {
        while let Some(receipt) = server.poll_receipt(client, SNAPSHOTS) {
            sender.receipt_acked(receipt); // the client holds that snapshot: a baseline
        }
        let mut buf = [0u8; 512];
        let sent = sender.encode_into(view, &mut buf)?; // a delta, or full
        let message = Msg::Snapshot(SnapshotBytes {
            bytes: buf[..sent.bytes].to_vec(),
        });
        let receipt = server.send_tracked(client, SNAPSHOTS, message)?;
        sender.sent_with(sent.sequence, receipt);
        Ok(())
    }
    // guide: end

    #[test]
    fn the_guide_shows_this_code() {
        let _ = send_snapshot;
        let source = include_str!("readme_examples.rs");
        let begin = source.find("// guide: begin\n").expect("begin") + "// guide: begin\n".len();
        let end = source.find("    // guide: end").expect("end");
        let guide = include_str!("../../netproto/GUIDE.md");
        for line in source[begin..end].lines().filter(|l| !l.trim().is_empty()) {
            let line = line.strip_prefix("    ").unwrap_or(line);
            assert!(guide.contains(line), "the guide lacks: {line}");
        }
    }
}
