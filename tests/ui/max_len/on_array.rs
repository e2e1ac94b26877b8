use netproto::NetMessage;

#[derive(NetMessage)]
struct Snapshot {
    #[net(max_len = 16)]
    ids: [u8; 16],
}

fn main() {}
