//! The arena's game backend: what a real game runs as a web service or matchmaker.
//! It shares a private key with its servers and hands each client a connect token
//! for the server it should join; the client cannot read or forge the token's private
//! part, and the server lets in only clients that bring one.

use std::net::SocketAddr;

use netproto::channel::LayerConfig;
use netproto::netcode::{ConnectToken, Key, TokenError, TokenParams, generate_connect_token};
use netproto::transport::insecure_dev::INSECURE_DEV_KEY;

use super::ArenaMessage;

/// Makes the arena's connect tokens.
#[derive(Debug)]
pub struct Backend {
    private_key: Key,
    protocol_id: u64,
    next_client_id: u64,
}

impl Backend {
    /// A backend with a fresh private key from the operating system (the server
    /// and the bots share this process, so the key never leaves it).
    pub fn random() -> Self {
        Self::with_key(Key::random())
    }

    /// The backend of the two-process mode: the server and the bots run in different
    /// processes with no channel to share a secret, so both use the library's
    /// public development key. Insecure: anyone can make its tokens.
    pub fn insecure_dev() -> Self {
        Self::with_key(INSECURE_DEV_KEY)
    }

    fn with_key(private_key: Key) -> Self {
        Self {
            private_key,
            protocol_id: netproto::protocol_id::<ArenaMessage>(&LayerConfig::default()),
            next_client_id: 1,
        }
    }

    /// The key the servers open tokens with.
    pub fn private_key(&self) -> &Key {
        &self.private_key
    }

    /// A token for the next player to reach the server bound at `server` through
    /// `public` (the address the client sends to: here its simulated link, in a real
    /// deployment the server's public address or its proxy). Valid for five minutes,
    /// with a 10-second connection timeout.
    pub fn token(
        &mut self,
        public: SocketAddr,
        server: SocketAddr,
    ) -> Result<ConnectToken, TokenError> {
        let mut params = TokenParams::new(self.protocol_id, self.next_client_id, vec![public]);
        params.internal_addresses = Some(vec![server]);
        self.next_client_id += 1;
        generate_connect_token(&params, &self.private_key, unix_time())
    }
}

fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
