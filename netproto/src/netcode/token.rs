//! Connect tokens: the 2048-byte token a backend hands a client, and its 1024-byte
//! private part sealed with XChaCha20-Poly1305 under the backend's private key.
//!
//! Private part (plaintext): client id (u64), timeout seconds (i32), number of
//! addresses (u32, 1 to 32), the internal addresses, client-to-server key (32),
//! server-to-client key (32), user data (256), zeros to byte 1008, then the 16-byte tag.
//!
//! Token: version (13), protocol id (u64), create timestamp (u64), expire timestamp
//! (u64), nonce (24), sealed private part (1024, bytes 61..1085), timeout seconds
//! (i32), number of addresses (u32, 1 to 32), the public addresses, the two keys, zeros
//! to 2048. Every integer is little-endian.

use std::net::SocketAddr;

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::address::{encode_address, read_address_from};
use super::crypto::{open_x, seal_x};
use super::wire::{Reader, Writer};
use super::{
    CONNECT_TOKEN_BYTES, CONNECT_TOKEN_PRIVATE_BYTES, KEY_BYTES, Key, MAC_BYTES,
    MAX_SERVERS_PER_CONNECT, NONCE_BYTES, Packet, TokenError, USER_DATA_BYTES, VERSION_INFO,
    random_bytes,
};

/// Where the tag of the sealed private part starts.
const PRIVATE_MAC_START: usize = CONNECT_TOKEN_PRIVATE_BYTES - MAC_BYTES;

/// The private part of a connect token: what a server learns when it opens a
/// connection request. Only the backend and the servers can read it.
///
/// Wiped when dropped: the session keys (each a [`Key`]), the user data, the client
/// id and the timeout are overwritten with zeros (the addresses are not secret). Its
/// `Debug` output shows the keys as `Key(..)`; `==` compares the keys in constant
/// time (the other fields are compared only by tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectTokenPrivate {
    /// The client's id, chosen by the backend (unique among connected clients).
    pub client_id: u64,
    /// Seconds without packets before a connection times out; negative: no timeout
    /// (see [`ConnectionConfig::allow_no_timeout`](crate::connection::ConnectionConfig::allow_no_timeout)), 0 is refused.
    pub timeout_seconds: i32,
    /// The servers' internal addresses (1 to 32): a server only accepts a request whose
    /// token lists its own address.
    pub server_addresses: Vec<SocketAddr>,
    /// The key the client seals its packets with.
    pub client_to_server_key: Key,
    /// The key the server seals its packets with.
    pub server_to_client_key: Key,
    /// Opaque data from the backend to the server (e.g. account or match details).
    pub user_data: [u8; USER_DATA_BYTES],
}

impl Drop for ConnectTokenPrivate {
    fn drop(&mut self) {
        // The keys wipe themselves.
        self.client_id.zeroize();
        self.timeout_seconds.zeroize();
        self.user_data.zeroize();
    }
}

impl ZeroizeOnDrop for ConnectTokenPrivate {}

/// The associated data of a sealed private part: version, protocol id, expire timestamp.
fn private_associated_data(protocol_id: u64, expire_timestamp: u64) -> [u8; 29] {
    let mut ad = [0u8; 29];
    ad[..13].copy_from_slice(&VERSION_INFO);
    ad[13..21].copy_from_slice(&protocol_id.to_le_bytes());
    ad[21..].copy_from_slice(&expire_timestamp.to_le_bytes());
    ad
}

/// The address count of a list, checked to be 1..=32.
fn checked_count(addresses: &[SocketAddr]) -> Result<u32, TokenError> {
    let count = u32::try_from(addresses.len()).unwrap_or(u32::MAX);
    if addresses.is_empty() || addresses.len() > MAX_SERVERS_PER_CONNECT {
        return Err(TokenError::BadAddressCount(count));
    }
    Ok(count)
}

/// Writes the address count and the addresses.
fn write_addresses(w: &mut Writer<'_>, addresses: &[SocketAddr]) -> Result<(), TokenError> {
    w.u32(checked_count(addresses)?)
        .map_err(|_| TokenError::Truncated)?;
    for addr in addresses {
        let (buf, len) = encode_address(addr);
        w.put(&buf[..len]).map_err(|_| TokenError::Truncated)?;
    }
    Ok(())
}

/// Reads the address count (checked to be 1..=32 before anything is allocated) and the
/// addresses.
fn read_addresses(r: &mut Reader<'_>) -> Result<Vec<SocketAddr>, TokenError> {
    let count = r.u32().ok_or(TokenError::Truncated)?;
    let n = usize::try_from(count).unwrap_or(usize::MAX);
    if !(1..=MAX_SERVERS_PER_CONNECT).contains(&n) {
        return Err(TokenError::BadAddressCount(count));
    }
    let mut addresses = Vec::with_capacity(n);
    for _ in 0..n {
        addresses.push(read_address_from(r)?);
    }
    Ok(addresses)
}

fn read_key(r: &mut Reader<'_>) -> Result<Key, TokenError> {
    r.array::<KEY_BYTES>()
        .map(Key::from_bytes)
        .ok_or(TokenError::Truncated)
}

impl ConnectTokenPrivate {
    /// The plaintext private part: 1024 bytes, of which the last 16 (where the tag
    /// goes) are zero, wiped when dropped. Refuses an address count outside 1..=32.
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub fn write(
        &self,
    ) -> Result<zeroize::Zeroizing<[u8; CONNECT_TOKEN_PRIVATE_BYTES]>, TokenError> {
        let mut plain = zeroize::Zeroizing::new([0u8; CONNECT_TOKEN_PRIVATE_BYTES]);
        self.write_into(&mut plain)?;
        Ok(plain)
    }

    /// Writes the plaintext private part into `plain` (whose last 16 bytes are left
    /// as they are).
    fn write_into(&self, plain: &mut [u8; CONNECT_TOKEN_PRIVATE_BYTES]) -> Result<(), TokenError> {
        let mut w = Writer::new(&mut plain[..PRIVATE_MAC_START]);
        let full = |_| TokenError::Truncated;
        w.u64(self.client_id).map_err(full)?;
        w.i32(self.timeout_seconds).map_err(full)?;
        write_addresses(&mut w, &self.server_addresses)?;
        w.put(self.client_to_server_key.as_bytes()).map_err(full)?;
        w.put(self.server_to_client_key.as_bytes()).map_err(full)?;
        w.put(&self.user_data).map_err(full)?;
        Ok(())
    }

    /// Reads a plaintext private part (as [`open`](Self::open) leaves it). Like the
    /// reference, the zero padding and the tag bytes are not checked.
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub fn read(plain: &[u8; CONNECT_TOKEN_PRIVATE_BYTES]) -> Result<Self, TokenError> {
        Self::read_from(&mut Reader::new(&plain[..PRIVATE_MAC_START]))
    }

    /// Reads the fields of a plaintext private part from `r`, leaving it after the
    /// user data.
    fn read_from(r: &mut Reader<'_>) -> Result<Self, TokenError> {
        let client_id = r.u64().ok_or(TokenError::Truncated)?;
        let timeout_seconds = r.i32().ok_or(TokenError::Truncated)?;
        let server_addresses = read_addresses(r)?;
        let client_to_server_key = read_key(r)?;
        let server_to_client_key = read_key(r)?;
        let user_data = r.array().ok_or(TokenError::Truncated)?;
        Ok(Self {
            client_id,
            timeout_seconds,
            server_addresses,
            client_to_server_key,
            server_to_client_key,
            user_data,
        })
    }

    /// The sealed private part: [`write`](Self::write), encrypted with
    /// XChaCha20-Poly1305 under `private_key` and `nonce`, associated data
    /// [`VERSION_INFO`] ++ `protocol_id` (LE) ++ `expire_timestamp` (LE), tag in the
    /// last 16 bytes.
    pub fn seal(
        &self,
        protocol_id: u64,
        expire_timestamp: u64,
        nonce: &[u8; NONCE_BYTES],
        private_key: &Key,
    ) -> Result<[u8; CONNECT_TOKEN_PRIVATE_BYTES], TokenError> {
        // Plaintext until sealed in place: wiped if writing or sealing fails.
        let mut data = [0u8; CONNECT_TOKEN_PRIVATE_BYTES];
        let sealed = self.write_into(&mut data).and_then(|()| {
            let ad = private_associated_data(protocol_id, expire_timestamp);
            let (body, mac) = data.split_at_mut(PRIVATE_MAC_START);
            let tag = seal_x(body, &ad, nonce, private_key).map_err(|_| TokenError::Encrypt)?;
            mac.copy_from_slice(&tag);
            Ok(())
        });
        if sealed.is_err() {
            data.zeroize();
        }
        sealed.map(|()| data)
    }

    /// Opens a sealed private part (as a connection request carries it) and reads it.
    /// [`TokenError::Decrypt`] if the tag does not verify under these inputs (the AEAD
    /// verifies the tag, in constant time). The plaintext fields in the buffer the
    /// part is opened in are wiped before this returns (on a failed open the buffer
    /// holds only ciphertext: the AEAD decrypts nothing whose tag does not verify).
    pub fn open(
        sealed: &[u8; CONNECT_TOKEN_PRIVATE_BYTES],
        protocol_id: u64,
        expire_timestamp: u64,
        nonce: &[u8; NONCE_BYTES],
        private_key: &Key,
    ) -> Result<Self, TokenError> {
        let mut data = *sealed;
        let ad = private_associated_data(protocol_id, expire_timestamp);
        let (body, mac) = data.split_at_mut(PRIVATE_MAC_START);
        let tag: [u8; MAC_BYTES] = (&*mac).try_into().map_err(|_| TokenError::Truncated)?;
        open_x(body, &ad, nonce, private_key, &tag).map_err(|_| TokenError::Decrypt)?;
        let mut r = Reader::new(&data[..PRIVATE_MAC_START]);
        let token = Self::read_from(&mut r);
        // Wipe what was read (a few hundred bytes: zeroize writes byte by byte, and a
        // server does this for every request it answers); after it comes the padding.
        // A part that authenticated but does not read is wiped whole.
        let read = match token {
            Ok(_) => PRIVATE_MAC_START - r.rest().len(),
            Err(_) => PRIVATE_MAC_START,
        };
        data[..read].zeroize();
        token
    }
}

/// A connect token as a backend hands it to a client (2048 bytes on the wire). The
/// client reads the public fields; the private part stays sealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectToken {
    /// The game's protocol id: servers refuse requests for another one.
    pub protocol_id: u64,
    /// When the backend made the token (seconds since the Unix epoch).
    pub create_timestamp: u64,
    /// When the token stops being accepted (seconds since the Unix epoch; `u64::MAX` =
    /// never).
    pub expire_timestamp: u64,
    /// The XChaCha20-Poly1305 nonce the private part is sealed with.
    pub nonce: [u8; NONCE_BYTES],
    /// The sealed private part (sealed with the private key).
    pub private_data: [u8; CONNECT_TOKEN_PRIVATE_BYTES],
    /// Seconds without packets before a connection times out; negative: no timeout
    /// (see [`ConnectionConfig::allow_no_timeout`](crate::connection::ConnectionConfig::allow_no_timeout)), 0 is refused.
    pub timeout_seconds: i32,
    /// The servers' public addresses (1 to 32), tried in order, each for the token's
    /// timeout ([`Client::from_token`](crate::connection::Client::from_token),
    /// [`UdpClient::connect`](crate::transport::UdpClient::connect)).
    pub server_addresses: Vec<SocketAddr>,
    /// The key the client seals its packets with.
    pub client_to_server_key: Key,
    /// The key the server seals its packets with.
    pub server_to_client_key: Key,
}

impl ConnectToken {
    /// The 2048 bytes of the token. Refuses an address count outside 1..=32.
    pub fn write(&self) -> Result<[u8; CONNECT_TOKEN_BYTES], TokenError> {
        let mut bytes = [0u8; CONNECT_TOKEN_BYTES];
        let mut w = Writer::new(&mut bytes);
        let full = |_| TokenError::Truncated;
        w.put(&VERSION_INFO).map_err(full)?;
        w.u64(self.protocol_id).map_err(full)?;
        w.u64(self.create_timestamp).map_err(full)?;
        w.u64(self.expire_timestamp).map_err(full)?;
        w.put(&self.nonce).map_err(full)?;
        w.put(&self.private_data).map_err(full)?;
        w.i32(self.timeout_seconds).map_err(full)?;
        write_addresses(&mut w, &self.server_addresses)?;
        w.put(self.client_to_server_key.as_bytes()).map_err(full)?;
        w.put(self.server_to_client_key.as_bytes()).map_err(full)?;
        Ok(bytes)
    }

    /// Reads a token as the reference does: exactly 2048 bytes, the version string,
    /// create timestamp not after expire timestamp, 1 to 32 addresses of type 1 or 2.
    /// The zero padding is not checked.
    pub fn read(bytes: &[u8]) -> Result<Self, TokenError> {
        if bytes.len() != CONNECT_TOKEN_BYTES {
            return Err(TokenError::WrongSize(bytes.len()));
        }
        let mut r = Reader::new(bytes);
        let t = TokenError::Truncated;
        if r.array::<13>().ok_or(t)? != VERSION_INFO {
            return Err(TokenError::BadVersion);
        }
        let protocol_id = r.u64().ok_or(t)?;
        let create_timestamp = r.u64().ok_or(t)?;
        let expire_timestamp = r.u64().ok_or(t)?;
        if create_timestamp > expire_timestamp {
            return Err(TokenError::BadTimestamps);
        }
        let nonce = r.array().ok_or(t)?;
        let private_data = r.array().ok_or(t)?;
        let timeout_seconds = r.i32().ok_or(t)?;
        let server_addresses = read_addresses(&mut r)?;
        let client_to_server_key = read_key(&mut r)?;
        let server_to_client_key = read_key(&mut r)?;
        Ok(Self {
            protocol_id,
            create_timestamp,
            expire_timestamp,
            nonce,
            private_data,
            timeout_seconds,
            server_addresses,
            client_to_server_key,
            server_to_client_key,
        })
    }

    /// The connection request a client sends to connect with this token (write it
    /// with the packet codec).
    pub fn request_packet(&self) -> Packet<'_> {
        Packet::Request {
            protocol_id: self.protocol_id,
            expire_timestamp: self.expire_timestamp,
            nonce: self.nonce,
            private_data: &self.private_data,
        }
    }
}

/// What a backend fills in to make a connect token (see [`generate_connect_token`] and
/// the [module documentation](super) for an example).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenParams {
    /// The game's protocol id.
    pub protocol_id: u64,
    /// The client's id (unique among the clients connected to a server).
    pub client_id: u64,
    /// Seconds without packets before the connection times out; negative: no timeout
    /// (see [`ConnectionConfig::allow_no_timeout`](crate::connection::ConnectionConfig::allow_no_timeout)), 0 is refused.
    pub timeout_seconds: i32,
    /// Token lifetime in seconds from its creation (`u64::MAX`, or any value reaching
    /// past `u64::MAX`, gives an expire timestamp of `u64::MAX`: never).
    pub expire_seconds: u64,
    /// The servers' public addresses (1 to 32), as the client reaches them.
    pub public_addresses: Vec<SocketAddr>,
    /// The servers' internal addresses, as each server knows its own (same length and
    /// order as `public_addresses`); `None` = same as public.
    pub internal_addresses: Option<Vec<SocketAddr>>,
    /// Opaque data for the server.
    pub user_data: [u8; USER_DATA_BYTES],
}

impl TokenParams {
    /// A token for `client_id` to connect to `public_addresses` (the same addresses
    /// in the private part), with a 10-second connection timeout, a 5-minute
    /// lifetime and zeroed user data: set the fields to change them.
    ///
    /// ```
    /// use netproto::netcode::TokenParams;
    ///
    /// let mut params = TokenParams::new(0x1234, 42, vec!["203.0.113.7:40000".parse().unwrap()]);
    /// params.user_data[0] = 3; // e.g. the player's team
    /// assert_eq!(params.timeout_seconds, 10);
    /// ```
    pub fn new(protocol_id: u64, client_id: u64, public_addresses: Vec<SocketAddr>) -> Self {
        Self {
            protocol_id,
            client_id,
            timeout_seconds: 10,
            expire_seconds: 300,
            public_addresses,
            internal_addresses: None,
            user_data: [0; USER_DATA_BYTES],
        }
    }
}

/// Makes a connect token created at `now_unix_seconds`, expiring `params.expire_seconds`
/// later, with a random nonce and random session keys from the OS RNG.
///
/// # Panics
///
/// Only if the OS random number generator fails (see `random_bytes`).
pub fn generate_connect_token(
    params: &TokenParams,
    private_key: &Key,
    now_unix_seconds: u64,
) -> Result<ConnectToken, TokenError> {
    generate_connect_token_with(
        params,
        private_key,
        now_unix_seconds,
        now_unix_seconds.saturating_add(params.expire_seconds),
        random_bytes(),
        Key::random(),
        Key::random(),
    )
}

/// Makes a connect token from explicit timestamps, nonce and session keys
/// (deterministic: for tests, and for backends with their own randomness).
/// `params.expire_seconds` is ignored: `expire_timestamp` is used as given. Never reuse
/// a nonce under the same private key.
pub fn generate_connect_token_with(
    params: &TokenParams,
    private_key: &Key,
    create_timestamp: u64,
    expire_timestamp: u64,
    nonce: [u8; NONCE_BYTES],
    client_to_server_key: Key,
    server_to_client_key: Key,
) -> Result<ConnectToken, TokenError> {
    checked_count(&params.public_addresses)?;
    if create_timestamp > expire_timestamp {
        return Err(TokenError::BadTimestamps);
    }
    let internal = match &params.internal_addresses {
        Some(internal) => {
            checked_count(internal)?;
            if internal.len() != params.public_addresses.len() {
                return Err(TokenError::AddressCountMismatch);
            }
            internal.clone()
        }
        None => params.public_addresses.clone(),
    };
    let private = ConnectTokenPrivate {
        client_id: params.client_id,
        timeout_seconds: params.timeout_seconds,
        server_addresses: internal,
        client_to_server_key: client_to_server_key.clone(),
        server_to_client_key: server_to_client_key.clone(),
        user_data: params.user_data,
    };
    let private_data = private.seal(params.protocol_id, expire_timestamp, &nonce, private_key)?;
    Ok(ConnectToken {
        protocol_id: params.protocol_id,
        create_timestamp,
        expire_timestamp,
        nonce,
        private_data,
        timeout_seconds: params.timeout_seconds,
        server_addresses: params.public_addresses.clone(),
        client_to_server_key,
        server_to_client_key,
    })
}
