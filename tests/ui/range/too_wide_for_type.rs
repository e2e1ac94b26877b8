use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=300)]
    health: u8,
}

fn main() {}
