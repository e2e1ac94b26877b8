use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..)]
    score: u32,
}

fn main() {}
