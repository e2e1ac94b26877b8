use netproto::NetMessage;

#[derive(NetMessage)]
struct Chat {
    nickname: Option<String>,
}

fn main() {}
