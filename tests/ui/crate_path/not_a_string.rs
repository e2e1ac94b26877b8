use netproto::NetMessage;

#[derive(NetMessage)]
#[net(crate = netproto)]
struct Player {
    alive: bool,
}

fn main() {}
