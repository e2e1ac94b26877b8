use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 10..=5)]
    team: u8,
}

fn main() {}
