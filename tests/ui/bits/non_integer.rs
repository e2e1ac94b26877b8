use netproto::NetMessage;

#[derive(NetMessage)]
struct Packet {
    #[net(bits = 16)]
    speed: f32,
}

fn main() {}
