use netproto::NetMessage;

const HIGH: f32 = -2.0;

#[derive(NetMessage)]
struct Aim {
    #[net(quantize(min = -1.0, max = HIGH, res = 0.01))]
    yaw: f32,
}

fn main() {}
