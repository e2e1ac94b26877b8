use netproto::NetMessage;

#[derive(NetMessage, Clone, PartialEq)]
#[net(delta)]
enum State {
    Idle,
    Running,
}

#[derive(NetMessage, Clone)]
#[net(delta)]
struct Player {
    #[net(delta = -1..=1)]
    state: State,
}

fn main() {}
