use netproto::NetMessage;

// Every problem is reported at once, not just the first.
#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=300)]
    health: u8,
    #[net(bits = 0)]
    flags: u8,
    name: String,
    #[net(quantize(min = 0.0, max = 1.0, res = -1.0))]
    speed: f32,
}

fn main() {}
