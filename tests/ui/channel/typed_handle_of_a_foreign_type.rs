use netproto::NetMessage;
use netproto::channel::{ChannelConfig, LayerConfig};

#[derive(NetMessage, Debug)]
struct Input(#[net(range = 0..=15)] u8);

#[derive(NetMessage, Debug)]
struct Stranger(#[net(range = 0..=15)] u8);

#[derive(NetMessage, Debug)]
#[net(message_set)]
enum Msg {
    Input(Input),
}

fn main() {
    let mut config = LayerConfig::with_channels(vec![]);
    // Stranger is no message of Msg: no typed channel for it.
    let _ = config.add_typed::<Msg, Stranger>(ChannelConfig::unreliable());
}
