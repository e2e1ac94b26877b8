use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(rnage = 0..=100)]
    health: u8,
}

fn main() {}
