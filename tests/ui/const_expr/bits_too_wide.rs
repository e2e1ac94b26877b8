use netproto::NetMessage;

const ID_BITS: u32 = 20;

#[derive(NetMessage)]
struct Packet {
    #[net(bits = ID_BITS)]
    id: u16,
}

fn main() {}
