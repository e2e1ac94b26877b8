use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(skip = true)]
    predicted: bool,
}

fn main() {}
