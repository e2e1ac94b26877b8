use netproto::NetMessage;

const LEN: i32 = -4;

#[derive(NetMessage)]
struct Chat {
    #[net(max_len = LEN)]
    text: String,
}

fn main() {}
