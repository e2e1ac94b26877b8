//! The README's channels code, compiled and run: keep the two in sync.

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::{LayerConfig, MessageStack};
use netproto::packet::EndpointConfig;

#[derive(NetMessage, Debug, PartialEq)]
enum Msg {
    Hello(#[net(range = 0..=100)] u8),
    Bye,
}

#[test]
fn readme_channels() -> Result<(), Box<dyn std::error::Error>> {
    // Channel 0 is reliable-ordered, channel 1 unreliable.
    let new = || {
        MessageStack::<Msg>::new(
            EndpointConfig::default(),
            LayerConfig::default(),
            Time::ZERO,
        )
    };
    let (mut a, mut b) = (new()?, new()?);
    a.send(0, Msg::Hello(42))?;
    let mut wire = Vec::new();
    a.send_packet(Time::ZERO, |datagram| wire.push(datagram.to_vec()))?; // once per tick
    for datagram in &wire {
        b.receive_datagram(Time::from_secs_f64(0.05), datagram)?;
    }
    assert_eq!(b.receive(0), Some(Msg::Hello(42)));
    assert_eq!(b.receive(0), None);
    let _ = Msg::Bye;
    Ok(())
}
