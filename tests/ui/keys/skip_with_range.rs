use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(skip)]
    #[net(range = 0..=100)]
    health: u8,
}

fn main() {}
