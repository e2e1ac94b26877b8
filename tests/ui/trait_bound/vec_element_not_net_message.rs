use netproto::NetMessage;

struct Texture;

#[derive(NetMessage)]
struct Atlas {
    #[net(max_len = 4)]
    textures: Vec<Texture>,
}

fn main() {}
