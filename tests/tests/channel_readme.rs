//! The guide's channels code, compiled and run: keep the two in sync.

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::{ChannelConfig, ChannelId, LayerConfig, MessageStack};
use netproto::packet::EndpointConfig;
use std::time::Duration;

#[derive(NetMessage, Debug, PartialEq)]
enum Msg {
    Hello(#[net(range = 0..=100)] u8),
    Bye,
}

#[test]
fn readme_channels() -> Result<(), Box<dyn std::error::Error>> {
    // LayerConfig::default(): ChannelId::RELIABLE (reliable-ordered) and UNRELIABLE.
    let now = Time::ZERO;
    let new = || MessageStack::<Msg>::new(EndpointConfig::default(), LayerConfig::default(), now);
    let (mut a, mut b) = (new()?, new()?);
    a.send(ChannelId::RELIABLE, Msg::Hello(42))?;
    let mut wire = Vec::new();
    a.send_packet(now, |datagram| wire.push(datagram.to_vec()))?; // once per tick
    for datagram in &wire {
        b.receive_datagram(now + Duration::from_millis(50), datagram)?;
    }
    assert_eq!(b.receive(ChannelId::RELIABLE), Some(Msg::Hello(42)));
    assert_eq!(b.receive(ChannelId::RELIABLE), None);
    let _ = Msg::Bye;
    Ok(())
}

/// The guide's channel ids.
#[test]
fn readme_channel_ids() {
    let mut config = LayerConfig::default(); // RELIABLE and UNRELIABLE
    let chat = config.add(ChannelConfig::reliable_unordered());
    let map = config.add(ChannelConfig::bulk());
    assert_eq!((chat, map), (ChannelId::new(2), ChannelId::new(3)));
}
