use netproto::NetMessage;

#[derive(NetMessage)]
struct Packet {
    #[net(bits = 9)]
    flags: u8,
}

fn main() {}
