use netproto::NetMessage;

#[derive(NetMessage)]
struct Aim {
    #[net(quantize(min = 1.0, max = -1.0, res = 0.01))]
    yaw: f32,
}

fn main() {}
