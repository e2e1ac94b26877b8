use netproto::NetMessage;

#[derive(NetMessage)]
union Bits {
    int: u32,
    float: f32,
}

fn main() {}
