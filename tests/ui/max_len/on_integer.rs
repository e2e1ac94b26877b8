use netproto::NetMessage;

#[derive(NetMessage)]
struct Snapshot {
    #[net(max_len = 16)]
    count: u32,
}

fn main() {}
