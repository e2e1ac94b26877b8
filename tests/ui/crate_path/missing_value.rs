use netproto::NetMessage;

#[derive(NetMessage)]
#[net(crate)]
struct Player {
    alive: bool,
}

fn main() {}
