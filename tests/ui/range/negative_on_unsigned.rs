use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = -1..=10)]
    lives: u8,
}

fn main() {}
