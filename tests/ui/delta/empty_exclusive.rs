use netproto::NetMessage;

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    #[net(quantize(min = 0.0, max = 10.0, res = 0.01), delta = 3..3)]
    x: f32,
}

fn main() {}
