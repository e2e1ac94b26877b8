use netproto::NetMessage;

#[derive(NetMessage, Clone)]
struct Position {
    #[net(range = 0..=1000)]
    x: u16,
}

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    position: Position,
}

fn main() {}
