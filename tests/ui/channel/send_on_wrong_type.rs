use netproto::NetMessage;
use netproto::channel::{ChannelConfig, LayerConfig, MessageLayer};

#[derive(NetMessage, Debug)]
struct Input(#[net(range = 0..=15)] u8);

#[derive(NetMessage, Debug)]
struct Chat(#[net(max_len = 140)] String);

#[derive(NetMessage, Debug)]
#[net(message_set)]
enum Msg {
    Input(Input),
    Chat(Chat),
}

fn main() {
    let mut config = LayerConfig::with_channels(vec![]);
    let inputs = config.add_typed::<Msg, Input>(ChannelConfig::unreliable());
    let mut layer = MessageLayer::<Msg>::new(config).unwrap();
    // A chat on the input channel: refused by the compiler.
    let _ = layer.send_on(inputs, Chat("hello".into()));
}
