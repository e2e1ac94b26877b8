use netproto::NetMessage;

#[derive(NetMessage)]
struct Chat {
    #[net(max_len = 8)]
    lines: Vec<String>,
}

fn main() {}
