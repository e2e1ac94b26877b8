use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net]
    health: u8,
}

fn main() {}
