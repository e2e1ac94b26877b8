use netproto::NetMessage;

#[derive(NetMessage)]
struct Chat {
    #[net(max_len = -1)]
    text: String,
}

fn main() {}
