use netproto::NetMessage;

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    #[net(delta = -31..=31)]
    score: u32,
}

fn main() {}
