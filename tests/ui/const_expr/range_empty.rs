use netproto::NetMessage;

const LOW: i32 = 10;
const HIGH: i32 = 5;

#[derive(NetMessage)]
struct Player {
    #[net(range = LOW..=HIGH)]
    team: i32,
}

fn main() {}
