use netproto::NetMessage;

#[derive(NetMessage)]
struct Inventory {
    count: usize,
}

fn main() {}
