use netproto::NetMessage;

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    #[net(delta = -1..=1)]
    alive: bool,
}

fn main() {}
