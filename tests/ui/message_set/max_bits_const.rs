use netproto::NetMessage;

const BUDGET: usize = 40;

#[derive(NetMessage)]
struct Chat {
    #[net(max_len = 8)]
    text: String,
}

#[derive(NetMessage)]
#[net(message_set, max_bits = BUDGET)]
enum GameMessage {
    Ping(()),
    Chat(Chat),
}

fn main() {}
