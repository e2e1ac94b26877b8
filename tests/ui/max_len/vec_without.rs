use netproto::NetMessage;

#[derive(NetMessage)]
struct Snapshot {
    ids: Vec<u16>,
}

fn main() {}
