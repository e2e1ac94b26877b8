use netproto::NetMessage;

#[derive(NetMessage)]
struct Input {
    fire: bool,
}

#[derive(NetMessage)]
#[net(max_bits = 100)]
enum GameMessage {
    Input(Input),
}

fn main() {}
