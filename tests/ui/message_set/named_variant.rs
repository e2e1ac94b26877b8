use netproto::NetMessage;

#[derive(NetMessage)]
struct Input {
    fire: bool,
}

#[derive(NetMessage)]
#[net(message_set)]
enum GameMessage {
    Input(Input),
    Move {
        #[net(range = -8..=7)]
        dx: i8,
    },
}

fn main() {}
