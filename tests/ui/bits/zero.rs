use netproto::NetMessage;

#[derive(NetMessage)]
struct Packet {
    #[net(bits = 0)]
    flags: u8,
}

fn main() {}
