use netproto::NetMessage;

#[derive(NetMessage)]
enum Never {}

fn main() {}
