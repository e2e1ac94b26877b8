use netproto::NetMessage;

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    #[net(max_len = 16, delta = -1..=1)]
    name: String,
}

fn main() {}
