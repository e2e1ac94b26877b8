//! Stateless challenges: SipHash-2-4 (written out, no dependency) keyed with the
//! server's secret, over the client's address, a coarse time bucket, the client's
//! nonce and the protocol id.
//!
//! The server answers a connection request with a [`token`] and keeps nothing; when
//! the response comes back it recomputes the token from the address the response
//! came from and the fields it carries. A response from another address, with a
//! forged token, or with a time bucket that is neither the current one nor the one
//! before fails the check and is dropped.

use core::hash::{Hash, Hasher};

/// SipHash-2-4 as a streaming [`Hasher`] (the reference algorithm of Aumasson and
/// Bernstein, 64-bit output), so any `Hash` address can be fed to it.
///
/// ```
/// use core::hash::Hasher;
/// use netproto::connection::SipHasher24;
///
/// // The reference vector: key 00..0f, message 00..0e.
/// let key: [u8; 16] = core::array::from_fn(|i| i as u8);
/// let mut h = SipHasher24::new(&key);
/// h.write(&(0u8..15).collect::<Vec<_>>());
/// assert_eq!(h.finish(), 0xa129_ca61_49be_45e5);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SipHasher24 {
    v: [u64; 4],
    tail: u64,
    ntail: usize,
    length: usize,
}

#[inline]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

impl SipHasher24 {
    /// A hasher keyed with `key` (k0 = bytes 0..8, k1 = bytes 8..16, little-endian).
    pub fn new(key: &[u8; 16]) -> Self {
        let mut k0 = [0u8; 8];
        let mut k1 = [0u8; 8];
        k0.copy_from_slice(&key[..8]);
        k1.copy_from_slice(&key[8..]);
        let (k0, k1) = (u64::from_le_bytes(k0), u64::from_le_bytes(k1));
        Self {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            ntail: 0,
            length: 0,
        }
    }

    #[inline]
    fn compress(&mut self, m: u64) {
        self.v[3] ^= m;
        round(&mut self.v);
        round(&mut self.v);
        self.v[0] ^= m;
    }
}

impl Hasher for SipHasher24 {
    fn write(&mut self, bytes: &[u8]) {
        self.length = self.length.wrapping_add(bytes.len());
        for &b in bytes {
            self.tail |= u64::from(b) << (8 * self.ntail);
            self.ntail += 1;
            if self.ntail == 8 {
                let m = self.tail;
                self.compress(m);
                self.tail = 0;
                self.ntail = 0;
            }
        }
    }

    fn finish(&self) -> u64 {
        let mut v = self.v;
        let b = ((self.length as u64 & 0xff) << 56) | self.tail;
        v[3] ^= b;
        round(&mut v);
        round(&mut v);
        v[0] ^= b;
        v[2] ^= 0xff;
        for _ in 0..4 {
            round(&mut v);
        }
        v[0] ^ v[1] ^ v[2] ^ v[3]
    }
}

/// The time bucket of `now` for buckets of `window` seconds: `floor(now / window)`,
/// saturating (NaN gives 0).
pub fn time_bucket(now: f64, window: f64) -> u64 {
    let bucket = (now / window).floor();
    if bucket.is_nan() || bucket <= 0.0 {
        0
    } else {
        bucket as u64
    }
}

/// The challenge token for `address` in time bucket `bucket`: SipHash-2-4 keyed with
/// the server's secret over the bucket, the client's nonce, the protocol id and the
/// address (through its `Hash` impl, stable within one build of the server).
pub fn token<A: Hash>(
    key: &[u8; 16],
    address: &A,
    bucket: u64,
    nonce: u64,
    protocol_id: u64,
) -> u64 {
    let mut h = SipHasher24::new(key);
    h.write(&bucket.to_le_bytes());
    h.write(&nonce.to_le_bytes());
    h.write(&protocol_id.to_le_bytes());
    address.hash(&mut h);
    h.finish()
}

/// Why a challenge response failed the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChallengeError {
    /// The bucket is neither the current one nor the one before.
    Expired,
    /// The token does not match the address and fields.
    Invalid,
}

/// Checks a challenge response: the bucket is the current one or the previous one,
/// and the token is the one we would have issued to `address`.
pub(crate) fn verify<A: Hash>(
    key: &[u8; 16],
    address: &A,
    current_bucket: u64,
    bucket: u64,
    nonce: u64,
    protocol_id: u64,
    presented: u64,
) -> Result<(), ChallengeError> {
    if bucket != current_bucket && bucket.wrapping_add(1) != current_bucket {
        return Err(ChallengeError::Expired);
    }
    if token(key, address, bucket, nonce, protocol_id) != presented {
        return Err(ChallengeError::Invalid);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(len: usize) -> u64 {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let message: Vec<u8> = (0..len as u8).collect();
        let mut h = SipHasher24::new(&key);
        h.write(&message);
        h.finish()
    }

    #[test]
    fn reference_vectors() {
        // From the SipHash paper's test vectors (vectors.h of the reference code).
        assert_eq!(reference(0), 0x726f_db47_dd0e_0e31);
        assert_eq!(reference(1), 0x74f8_39c5_93dc_67fd);
        assert_eq!(reference(8), 0x93f5_f579_9a93_2462);
        assert_eq!(reference(15), 0xa129_ca61_49be_45e5);
    }

    #[test]
    fn streaming_in_pieces_equals_one_write() {
        let key = [7u8; 16];
        let data: Vec<u8> = (0..40).collect();
        let mut one = SipHasher24::new(&key);
        one.write(&data);
        let mut pieces = SipHasher24::new(&key);
        for chunk in data.chunks(3) {
            pieces.write(chunk);
        }
        assert_eq!(one.finish(), pieces.finish());
    }

    #[test]
    fn verify_checks_bucket_address_and_fields() {
        let key = [1u8; 16];
        let t = token(&key, &5u32, 100, 9, 42);
        assert_eq!(verify(&key, &5u32, 100, 100, 9, 42, t), Ok(()));
        assert_eq!(verify(&key, &5u32, 101, 100, 9, 42, t), Ok(()));
        assert_eq!(
            verify(&key, &5u32, 102, 100, 9, 42, t),
            Err(ChallengeError::Expired)
        );
        assert_eq!(
            verify(&key, &5u32, 99, 100, 9, 42, t),
            Err(ChallengeError::Expired)
        );
        assert_eq!(
            verify(&key, &6u32, 100, 100, 9, 42, t),
            Err(ChallengeError::Invalid)
        );
        assert_eq!(
            verify(&key, &5u32, 100, 100, 8, 42, t),
            Err(ChallengeError::Invalid)
        );
        assert_eq!(
            verify(&[2u8; 16], &5u32, 100, 100, 9, 42, t),
            Err(ChallengeError::Invalid)
        );
        assert_eq!(time_bucket(25.0, 10.0), 2);
        assert_eq!(time_bucket(-5.0, 10.0), 0);
        assert_eq!(time_bucket(f64::NAN, 10.0), 0);
    }
}
