use netproto::NetMessage;

#[derive(NetMessage)]
#[net(max_len = 4)]
struct Player {
    alive: bool,
}

fn main() {}
