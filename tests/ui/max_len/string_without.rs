use netproto::NetMessage;

#[derive(NetMessage)]
struct Chat {
    text: String,
}

fn main() {}
