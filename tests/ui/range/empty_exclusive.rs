use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 5..5)]
    team: u8,
}

fn main() {}
