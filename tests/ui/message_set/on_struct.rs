use netproto::NetMessage;

#[derive(NetMessage)]
#[net(message_set)]
struct Input {
    fire: bool,
}

fn main() {}
