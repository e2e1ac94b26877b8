use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=100u16)]
    health: u8,
}

fn main() {}
