use netproto::NetMessage;

#[derive(NetMessage)]
struct Input {
    fire: bool,
}

#[derive(NetMessage)]
#[net(message_set)]
enum GameMessage {
    Input(Input),
    Count(#[net(range = 0..=3)] u8),
}

fn main() {}
