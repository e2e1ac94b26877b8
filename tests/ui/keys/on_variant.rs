use netproto::NetMessage;

#[derive(NetMessage)]
enum Command {
    Stop,
    #[net(skip)]
    Go(bool),
}

fn main() {}
