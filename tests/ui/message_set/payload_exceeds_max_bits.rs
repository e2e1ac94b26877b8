use netproto::NetMessage;

#[derive(NetMessage)]
struct Small {
    #[net(range = 0..=100)]
    health: u8,
}

#[derive(NetMessage)]
struct Snapshot {
    positions: [f32; 4],
}

#[derive(NetMessage)]
#[net(message_set, max_bits = 64)]
enum GameMessage {
    Input(Small),
    Full(Snapshot),
}

fn main() {}
