//! The README's code, compiled and run: keep the two in sync.

use netproto::NetMessage;

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

#[test]
fn readme() -> Result<(), Box<dyn std::error::Error>> {
    let mut input = PlayerInput {
        tick: 9,
        health: 97,
        yaw: 1.25,
        fire: true,
        chat: String::new(),
    };
    let bytes = netproto::encode(&mut input)?;
    assert_eq!(bytes.len(), 5); // 35 bits, then the string's align
    let back: PlayerInput = netproto::decode(&bytes)?;
    let bits = netproto::measure(&mut input);
    assert_eq!(bits, 42); // the align is charged 7 bits
    assert_eq!((back.tick, back.health, back.fire), (9, 97, true));
    assert!((back.yaw - 1.25).abs() <= 0.0005);
    use netproto::packet::{Endpoint, EndpointConfig};
    let mut a = Endpoint::new(EndpointConfig::default(), 0.0)?;
    let mut b = Endpoint::new(EndpointConfig::default(), 0.0)?;
    let mut wire = Vec::new();
    let mut delivered = 0;
    a.send(0.0, b"hello", |datagram| wire.push(datagram.to_vec()))?;
    for datagram in &wire {
        b.receive(0.05, datagram, |_sequence, payload| payload == b"hello")?;
        delivered += 1;
    }
    assert_eq!(delivered, 1);
    Ok(())
}
