//! A game server for the failover test (`tests/tests/failover.rs`): binds an
//! ephemeral port on loopback, prints its address on one line of stdout, and serves
//! the example game's messages over the default channels to tokens sealed with the
//! test's key until it is killed.
//!
//! ```sh
//! cargo run -p netproto-tests --bin failover_server
//! ```

use std::io::Write;
use std::time::Duration;

use netproto::netcode::Key;
use netproto::transport::{Config, UdpServer};
use netproto_examples::game::GameMessage;

/// The private key the failover test seals its tokens with.
const KEY: [u8; 32] = [0x5a; 32];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config {
        max_clients: 4,
        ..Config::default()
    };
    let mut server = UdpServer::<GameMessage>::bind("127.0.0.1:0", Key::from_bytes(KEY), config)?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.local_addr()?)?;
    stdout.flush()?;
    loop {
        server.update()?;
        while server.poll_event().is_some() {}
        std::thread::sleep(Duration::from_millis(2));
    }
}
