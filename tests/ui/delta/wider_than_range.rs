use netproto::NetMessage;

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    #[net(range = 0..=100, delta = -200..=200)]
    health: u8,
}

fn main() {}
