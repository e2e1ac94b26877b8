//! The UDP server's batched receive (quinn-udp: recvmmsg batches of 32 where the
//! platform has them) over real loopback sockets: every datagram of a burst larger
//! than a batch is read and counted once, whatever it holds (empty, garbage, the
//! largest UDP payload), and a client connects and exchanges through the same socket
//! afterwards.

use std::net::UdpSocket;
use std::time::Duration;

use netproto::NetMessage;
use netproto::channel::ChannelId;
use netproto::transport::{Config, UdpClient, UdpServer};

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Ping {
    seq: u32,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Ping(Ping),
}

const RELIABLE: ChannelId = ChannelId::RELIABLE;

#[test]
fn a_burst_of_hostile_datagrams_is_read_whole_and_the_server_still_serves() {
    let mut server = UdpServer::<Msg>::bind_insecure_dev(
        "127.0.0.1:0",
        Config {
            max_clients: 4,
            ..Config::default()
        },
    )
    .expect("bind");
    let address = server.local_addr().expect("address");
    let attacker = UdpSocket::bind("127.0.0.1:0").expect("attacker socket");
    // 100 datagrams: an empty one, the largest UDP payload, and garbage of every size
    // up to 1300 bytes: more than three receive batches.
    let mut sizes = vec![0, 65_507];
    sizes.extend((0..98).map(|i| 1 + i * 13));
    let mut bytes = 0u64;
    for (i, &size) in sizes.iter().enumerate() {
        let datagram: Vec<u8> = (0..size).map(|j| (i * 31 + j * 7) as u8).collect();
        attacker.send_to(&datagram, address).expect("send");
        bytes += size as u64;
    }
    // Loopback delivers at once; the burst waits in the socket until the update.
    let mut read = 0;
    for _ in 0..100 {
        server.update().expect("update");
        read = server.transport_stats().datagrams_received;
        if read >= sizes.len() as u64 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(read, sizes.len() as u64, "every datagram read once");
    assert_eq!(server.transport_stats().bytes_received, bytes);
    assert_eq!(
        server.transport_stats().datagrams_sent,
        0,
        "nothing answers garbage"
    );

    let mut client =
        UdpClient::<Msg>::connect_insecure_dev(address, 7, Config::default()).expect("client");
    client
        .send(RELIABLE, Msg::Ping(Ping { seq: 1 }))
        .expect("queued");
    let mut echoed = None;
    for _ in 0..400 {
        client.update().expect("client update");
        server.update().expect("server update");
        let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
        for id in clients {
            while let Some(message) = server.receive(id, RELIABLE) {
                server.send(id, RELIABLE, message).expect("echo");
            }
        }
        if let Some(message) = client.receive(RELIABLE) {
            echoed = Some(message);
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(echoed, Some(Msg::Ping(Ping { seq: 1 })));
}
