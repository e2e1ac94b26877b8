use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 100)]
    score: u32,
}

fn main() {}
