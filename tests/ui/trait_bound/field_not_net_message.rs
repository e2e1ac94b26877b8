use netproto::NetMessage;

struct Texture;

#[derive(NetMessage)]
struct Sprite {
    #[net(range = 0..=100)]
    id: u8,
    texture: Texture,
}

fn main() {}
