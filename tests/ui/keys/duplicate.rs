use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=100, range = 0..=200)]
    health: u8,
}

fn main() {}
