use netproto::NetMessage;

#[derive(NetMessage)]
#[net(crate = "my engine::netproto")]
struct Player {
    alive: bool,
}

fn main() {}
