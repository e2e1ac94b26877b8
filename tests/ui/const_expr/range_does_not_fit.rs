use netproto::NetMessage;

const LIMIT: u32 = 300;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=LIMIT)]
    health: u8,
}

fn main() {}
