//! The smallest game over netproto: a server and a client in one process, over UDP on
//! 127.0.0.1, at 60 frames a second for two seconds. The client says hello (reliable)
//! and sends its input every frame (unreliable); the server answers the hello and
//! counts the inputs.
//!
//! ```sh
//! cargo run --example minimal
//! ```
//!
//! The connection's send rate is raised to one packet per frame (see "A 60 Hz game"
//! in the crate docs), and netproto's `tracing` events go to the terminal.

use std::time::{Duration, Instant};

use netproto::NetMessage;
use netproto::channel::ChannelId;
use netproto::transport::{Config, UdpClient, UdpServer};

#[derive(NetMessage, Debug, Clone)]
struct Chat {
    #[net(max_len = 140)] // bytes of UTF-8
    text: String,
}

#[derive(NetMessage, Debug, Clone)]
struct Input {
    frame: u32,
    #[net(range = -1..=1)]
    move_x: i8,
}

#[derive(NetMessage, Debug, Clone)]
#[net(message_set)]
enum Msg {
    Chat(Chat),
    Input(Input),
}
const FRAME: Duration = Duration::from_nanos(1_000_000_000 / 60);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_target(false).init();

    // Both sides: the same messages, channels and send rate. A packet every frame
    // that has news, with slack for a jittery sleep (the default is the article's 30
    // a second: every other frame at 60 Hz), and 30 in bad mode (the preset's 20).
    let mut config = Config::fast_paced();
    config.connection.congestion.bad_rate = 30.0;

    // The server and a client of player 1, with development tokens (a key compiled
    // into the library): never ship them.
    let mut server = UdpServer::<Msg>::bind_insecure_dev("127.0.0.1:0", config.clone())?;
    let address = server.local_addr()?;
    let mut client = UdpClient::<Msg>::connect_insecure_dev(address, 1, config)?;
    client.send(
        ChannelId::RELIABLE,
        Msg::Chat(Chat {
            text: "hello".into(),
        }),
    )?;

    let mut inputs = 0;
    let start = Instant::now();
    for frame in 0..120 {
        let tick = Instant::now();
        if client.is_connected() {
            let input = Input { frame, move_x: 1 };
            client.send(ChannelId::UNRELIABLE, Msg::Input(input))?;
        }
        client.update()?;
        server.update()?;
        let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
        for id in clients {
            for channel in [ChannelId::RELIABLE, ChannelId::UNRELIABLE] {
                while let Some(message) = server.receive(id, channel) {
                    match message {
                        Msg::Chat(chat) => {
                            let text = format!("welcome! you said {:?}", chat.text);
                            server.send(id, ChannelId::RELIABLE, Msg::Chat(Chat { text }))?;
                        }
                        Msg::Input(_) => inputs += 1,
                    }
                }
            }
        }
        while let Some(Msg::Chat(chat)) = client.receive(ChannelId::RELIABLE) {
            println!("client got: {}", chat.text);
        }
        std::thread::sleep(FRAME.saturating_sub(tick.elapsed()));
    }
    let rtt = client
        .stats()
        .map_or(0.0, |s| s.link.endpoint.rtt.as_secs_f64() * 1000.0);
    println!(
        "server got {inputs} inputs in {:.1} s; client RTT {rtt:.2} ms",
        start.elapsed().as_secs_f64()
    );
    client.disconnect();
    server.update()?;
    Ok(())
}
