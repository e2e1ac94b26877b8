use netproto::NetMessage;

struct Handle(u32);

#[derive(NetMessage)]
struct Sprite {
    #[net(range = 0..=100)]
    id: u8,
    #[net(skip)]
    handle: Handle,
}

fn main() {}
