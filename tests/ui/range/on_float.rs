use netproto::NetMessage;

#[derive(NetMessage)]
struct Player {
    #[net(range = 0..=1)]
    speed: f32,
}

fn main() {}
