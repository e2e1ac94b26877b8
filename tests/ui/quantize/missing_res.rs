use netproto::NetMessage;

#[derive(NetMessage)]
struct Position {
    #[net(quantize(min = -1.0, max = 1.0))]
    x: f32,
}

fn main() {}
