use netproto::NetMessage;

#[derive(NetMessage)]
struct Input {
    fire: bool,
}

#[derive(NetMessage)]
#[net(message_set)]
enum GameMessage {
    Input(Input),
    Pair(Input, Input),
}

fn main() {}
