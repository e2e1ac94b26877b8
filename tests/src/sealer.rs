//! A client's side of the netcode seal, for tests that speak to a server with
//! hand-made datagrams: the connection request of a token, and packets sealed with
//! the token's client-to-server key at our own sequence.

use netproto::connection::MAX_DATAGRAM_BYTES;
use netproto::internals::netcode::{Packet, write_packet};
use netproto::netcode::{ConnectToken, Key};

/// The 1078-byte connection request of `token` (not sealed: the key is unused).
pub fn request(token: &ConnectToken) -> Vec<u8> {
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let key = Key::from_bytes([0; 32]);
    let len = write_packet(
        &token.request_packet(),
        0,
        &key,
        token.protocol_id,
        &mut buf,
    )
    .expect("a request fits");
    buf[..len].to_vec()
}

/// Seals a client's packets: the token's client-to-server key, our sequence.
#[derive(Debug)]
pub struct Sealer {
    /// The key packets are sealed with.
    pub key: Key,
    /// The protocol id in their associated data.
    pub protocol_id: u64,
    /// The sequence of the next packet.
    pub sequence: u64,
}

impl Sealer {
    /// A sealer for the client of `token`, from sequence 0.
    pub fn for_token(token: &ConnectToken) -> Self {
        Self {
            key: token.client_to_server_key.clone(),
            protocol_id: token.protocol_id,
            sequence: 0,
        }
    }

    /// `packet` sealed at the next sequence.
    pub fn seal(&mut self, packet: &Packet<'_>) -> Vec<u8> {
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        let len = write_packet(packet, self.sequence, &self.key, self.protocol_id, &mut buf)
            .expect("the packet fits");
        self.sequence += 1;
        buf[..len].to_vec()
    }
}
