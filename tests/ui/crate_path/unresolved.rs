// The path is used as written: one that does not resolve is the compiler's error, at
// the string.
use netproto::NetMessage;

#[derive(NetMessage)]
#[net(crate = "engine::netproto")]
struct Player {
    alive: bool,
}

fn main() {}
