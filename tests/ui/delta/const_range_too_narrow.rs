use netproto::NetMessage;

const LIMIT: u8 = 20;

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    #[net(range = 0..=LIMIT, delta = -31..=31)]
    health: u8,
}

fn main() {}
