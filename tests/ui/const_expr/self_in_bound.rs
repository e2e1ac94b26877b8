use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=Self::MAX_HEALTH)]
    health: u8,
}

impl Player {
    const MAX_HEALTH: u8 = 100;
}

fn main() {}
