//! Target: reading connect tokens, the public 2048-byte token and its private part
//! (opened with the private key, and parsed as plaintext).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use netproto::internals::netcode::{
    CONNECT_TOKEN_BYTES, CONNECT_TOKEN_PRIVATE_BYTES, ConnectTokenPrivate, NONCE_BYTES,
};
use netproto::netcode::{ConnectToken, Key, TokenError, TokenParams, generate_connect_token_with};
use netproto::sim::Rng;

use super::{PRIVATE_KEY, Seed};

/// The protocol id, expire timestamp and nonce the harness seals private parts with
/// in mode 3 (fixed: every input replays byte for byte).
const SEAL_PROTOCOL_ID: u64 = 0x6e65_7470_726f_746f;
const SEAL_EXPIRE: u64 = 1_800_003_600;
const SEAL_NONCE: [u8; NONCE_BYTES] = *b"netproto-fuzz-token-nonc";

/// `bytes` cut or zero-padded to `N` bytes.
fn sized<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    let n = bytes.len().min(N);
    out[..n].copy_from_slice(&bytes[..n]);
    out
}

/// The first byte picks the mode (`op % 4`), the rest is the data:
///
/// * `0`: the data is a connect token, read as a client reads one (any length: all
///   but 2048 must be refused);
/// * `1`: the same with the data cut or zero-padded to 2048 bytes (so that mutations
///   that change the length still reach the fields);
/// * `2`: the data, cut or zero-padded to 1024 bytes, is a private part in the clear
///   ([`ConnectTokenPrivate::read`]);
/// * `3`: the same plaintext, sealed by the harness with [`PRIVATE_KEY`], then opened.
///
/// Checks: no panic; a token that reads writes back to bytes that read to the same
/// token; its private part, when it opens with [`PRIVATE_KEY`] (the seeds are sealed
/// with it), reads to a private part that writes and reads back to itself, and
/// sealing it again with the token's own fields gives the same sealed bytes; its
/// private part opens only under the token's own protocol id, expire timestamp and
/// nonce; a plaintext that reads round-trips; a sealed plaintext opens to what the
/// plaintext reads to and refuses a flipped bit. Returns 1 per token or private part
/// read, plus 1 when a token's private part opened.
pub fn netcode_token(data: &[u8]) -> usize {
    let Some((&op, rest)) = data.split_first() else {
        return 0;
    };
    match op % 4 {
        0 => read_token(rest),
        1 => read_token(&sized::<CONNECT_TOKEN_BYTES>(rest)),
        2 => read_private(&sized(rest)),
        _ => seal_and_open(&sized(rest)),
    }
}

fn read_token(bytes: &[u8]) -> usize {
    let token = match ConnectToken::read(bytes) {
        Ok(token) => token,
        Err(e) => {
            if bytes.len() != CONNECT_TOKEN_BYTES {
                assert_eq!(e, TokenError::WrongSize(bytes.len()));
            }
            return 0;
        }
    };
    assert_eq!(bytes.len(), CONNECT_TOKEN_BYTES);
    assert!(token.create_timestamp <= token.expire_timestamp);
    assert!((1..=32).contains(&token.server_addresses.len()));
    let written = token.write().expect("a token that reads writes");
    assert_eq!(
        ConnectToken::read(&written).as_ref(),
        Ok(&token),
        "a token does not read back to itself"
    );
    // Everything but the zero padding after the keys is read: the bytes up to it
    // are written back as they were.
    let fields = CONNECT_TOKEN_BYTES - trailing_padding(&token);
    assert_eq!(&written[..fields], &bytes[..fields], "a field was not kept");
    assert!(written[fields..].iter().all(|&b| b == 0));

    let key = Key::from_bytes(PRIVATE_KEY);
    let open = |protocol_id, expire, nonce: &[u8; NONCE_BYTES]| {
        ConnectTokenPrivate::open(&token.private_data, protocol_id, expire, nonce, &key)
    };
    let Ok(private) = open(token.protocol_id, token.expire_timestamp, &token.nonce) else {
        return 1;
    };
    check_private(&private);
    let sealed = private
        .seal(
            token.protocol_id,
            token.expire_timestamp,
            &token.nonce,
            &key,
        )
        .expect("an opened private part seals");
    assert_eq!(
        sealed, token.private_data,
        "sealing again changed the bytes"
    );
    // The associated data binds the public fields the server reads.
    let mut nonce = token.nonce;
    nonce[0] ^= 1;
    assert_eq!(
        open(token.protocol_id ^ 1, token.expire_timestamp, &token.nonce),
        Err(TokenError::Decrypt)
    );
    assert_eq!(
        open(token.protocol_id, token.expire_timestamp ^ 1, &token.nonce),
        Err(TokenError::Decrypt)
    );
    assert_eq!(
        open(token.protocol_id, token.expire_timestamp, &nonce),
        Err(TokenError::Decrypt)
    );
    2
}

/// The bytes of zero padding at the end of a written token: what follows the
/// addresses and keys.
fn trailing_padding(token: &ConnectToken) -> usize {
    let addresses: usize = token
        .server_addresses
        .iter()
        .map(|a| if a.is_ipv4() { 1 + 4 + 2 } else { 1 + 16 + 2 })
        .sum();
    let used = 13 + 8 + 8 + 8 + NONCE_BYTES + CONNECT_TOKEN_PRIVATE_BYTES + 4 + 4 + addresses + 64;
    CONNECT_TOKEN_BYTES - used
}

/// A private part that read: it writes, and what it writes reads back to itself.
fn check_private(private: &ConnectTokenPrivate) {
    assert!((1..=32).contains(&private.server_addresses.len()));
    let plain = private.write().expect("a private part that reads writes");
    assert_eq!(
        ConnectTokenPrivate::read(&plain).as_ref(),
        Ok(private),
        "a private part does not read back to itself"
    );
}

fn read_private(plain: &[u8; CONNECT_TOKEN_PRIVATE_BYTES]) -> usize {
    match ConnectTokenPrivate::read(plain) {
        Ok(private) => {
            check_private(&private);
            1
        }
        Err(_) => 0,
    }
}

fn seal_and_open(plain: &[u8; CONNECT_TOKEN_PRIVATE_BYTES]) -> usize {
    let read = ConnectTokenPrivate::read(plain);
    let Ok(private) = read else {
        return 0;
    };
    check_private(&private);
    let key = Key::from_bytes(PRIVATE_KEY);
    let mut sealed = private
        .seal(SEAL_PROTOCOL_ID, SEAL_EXPIRE, &SEAL_NONCE, &key)
        .expect("a private part that reads seals");
    let opened =
        ConnectTokenPrivate::open(&sealed, SEAL_PROTOCOL_ID, SEAL_EXPIRE, &SEAL_NONCE, &key);
    assert_eq!(
        opened.as_ref(),
        Ok(&private),
        "a sealed private part did not open"
    );
    // One flipped bit anywhere (picked from the plaintext) and it must not open.
    let bit = plain.iter().fold(0usize, |h, &b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    }) % (CONNECT_TOKEN_PRIVATE_BYTES * 8);
    sealed[bit / 8] ^= 1 << (bit % 8);
    assert_eq!(
        ConnectTokenPrivate::open(&sealed, SEAL_PROTOCOL_ID, SEAL_EXPIRE, &SEAL_NONCE, &key),
        Err(TokenError::Decrypt),
        "a sealed private part with a flipped bit opened"
    );
    1
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    fn address(rng: &mut Rng) -> SocketAddr {
        if rng.below(2) == 0 {
            SocketAddr::from((Ipv4Addr::from(rng.next_u64() as u32), rng.next_u64() as u16))
        } else {
            let mut octets = [0u8; 16];
            rng.fill_bytes(&mut octets);
            SocketAddr::from((Ipv6Addr::from(octets), rng.next_u64() as u16))
        }
    }

    fn bytes<const N: usize>(rng: &mut Rng) -> [u8; N] {
        let mut out = [0u8; N];
        rng.fill_bytes(&mut out);
        out
    }

    /// `count` inputs, in turn of each mode: tokens sealed with [`PRIVATE_KEY`]
    /// (1 to 32 IPv4 and IPv6 addresses, random keys, user data, timestamps), taken 2
    /// (read, opened); private parts in the clear, taken 1.
    pub fn netcode_token(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        let key = Key::from_bytes(PRIVATE_KEY);
        (0..count)
            .map(|i| {
                let max = if rng.below(4) == 0 { 32 } else { 3 };
                let n = 1 + rng.below(max) as usize;
                let public: Vec<SocketAddr> = (0..n).map(|_| address(&mut rng)).collect();
                let mut params = TokenParams::new(rng.next_u64(), rng.next_u64(), public);
                if rng.below(2) == 0 {
                    params.internal_addresses = Some((0..n).map(|_| address(&mut rng)).collect());
                }
                params.timeout_seconds = rng.next_u64() as i32;
                rng.fill_bytes(&mut params.user_data);
                let create = rng.next_u64() >> 1;
                let expire = create + rng.below(1 << 40);
                let token = generate_connect_token_with(
                    &params,
                    &key,
                    create,
                    expire,
                    bytes(&mut rng),
                    Key::from_bytes(bytes(&mut rng)),
                    Key::from_bytes(bytes(&mut rng)),
                )
                .expect("a valid token");
                let mode = (i % 4) as u8;
                let mut input = vec![mode];
                if mode < 2 {
                    input.extend_from_slice(&token.write().expect("a token writes"));
                    Seed::taking(input, 2)
                } else {
                    let private = ConnectTokenPrivate {
                        client_id: params.client_id,
                        timeout_seconds: params.timeout_seconds,
                        server_addresses: params
                            .internal_addresses
                            .clone()
                            .unwrap_or(params.public_addresses.clone()),
                        client_to_server_key: token.client_to_server_key.clone(),
                        server_to_client_key: token.server_to_client_key.clone(),
                        user_data: params.user_data,
                    };
                    let plain = private.write().expect("a private part writes");
                    // Trailing zeros are left off at random (the target pads them).
                    let keep = plain.len() - rng.below(64) as usize;
                    input.extend_from_slice(&plain[..keep]);
                    Seed::taking(input, 1)
                }
            })
            .collect()
    }
}
