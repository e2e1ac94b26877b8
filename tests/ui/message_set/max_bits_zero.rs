use netproto::NetMessage;

#[derive(NetMessage)]
struct Input {
    fire: bool,
}

#[derive(NetMessage)]
#[net(message_set, max_bits = 0)]
enum GameMessage {
    Input(Input),
}

fn main() {}
