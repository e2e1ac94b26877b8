use netproto::NetMessage;

#[derive(NetMessage, Clone)]
struct Player {
    #[net(range = 0..=100, delta = -15..=15)]
    health: u8,
}

fn main() {}
