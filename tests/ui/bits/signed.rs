use netproto::NetMessage;

#[derive(NetMessage)]
struct Packet {
    #[net(bits = 12)]
    delta: i16,
}

fn main() {}
