use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=2.5)]
    speed: u8,
}

fn main() {}
