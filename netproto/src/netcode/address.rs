//! Server addresses as connect tokens carry them.
//!
//! A type byte, then: 1 = IPv4, the 4 address bytes in order and the port (u16 LE);
//! 2 = IPv6, the eight 16-bit groups each little-endian, then the port (u16 LE). IPv6
//! flow info and scope id are not carried (they read back as 0).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use super::TokenError;
use super::wire::Reader;

/// Bytes of the longest address encoding (IPv6: type, 16 address bytes, port).
pub const MAX_ADDRESS_BYTES: usize = 1 + 16 + 2;

const ADDRESS_IPV4: u8 = 1;
const ADDRESS_IPV6: u8 = 2;

/// The encoding of `addr` in a fixed buffer, and its length (7 or 19).
pub(crate) fn encode_address(addr: &SocketAddr) -> ([u8; MAX_ADDRESS_BYTES], usize) {
    let mut buf = [0u8; MAX_ADDRESS_BYTES];
    match addr {
        SocketAddr::V4(v4) => {
            buf[0] = ADDRESS_IPV4;
            buf[1..5].copy_from_slice(&v4.ip().octets());
            buf[5..7].copy_from_slice(&v4.port().to_le_bytes());
            (buf, 7)
        }
        SocketAddr::V6(v6) => {
            buf[0] = ADDRESS_IPV6;
            for (chunk, group) in buf[1..17].chunks_exact_mut(2).zip(v6.ip().segments()) {
                chunk.copy_from_slice(&group.to_le_bytes());
            }
            buf[17..19].copy_from_slice(&v6.port().to_le_bytes());
            (buf, MAX_ADDRESS_BYTES)
        }
    }
}

/// Writes `addr` at the start of `out`; returns the bytes written (7 for IPv4, 19 for
/// IPv6).
///
/// ```
/// use netproto::internals::netcode::{read_address, write_address};
///
/// let addr = "[2001:db8::1]:40000".parse().unwrap();
/// let mut buf = [0u8; 19];
/// let n = write_address(&addr, &mut buf);
/// assert_eq!(n, 19);
/// assert_eq!(&buf[..3], &[2, 0x01, 0x20]); // type 2, group 0x2001 little-endian
/// assert_eq!(read_address(&buf).unwrap(), (addr, 19));
/// ```
///
/// # Panics
///
/// If `out` is shorter than the encoding ([`MAX_ADDRESS_BYTES`] always fits).
#[cfg(any(test, feature = "internals"))] // used by tests only
pub fn write_address(addr: &SocketAddr, out: &mut [u8]) -> usize {
    let (buf, len) = encode_address(addr);
    out[..len].copy_from_slice(&buf[..len]);
    len
}

/// Reads one address from the start of `bytes`; returns it and the bytes it took.
/// Refuses a type other than 1 or 2 and a truncated address.
#[cfg(any(test, feature = "internals"))] // used by tests only
pub fn read_address(bytes: &[u8]) -> Result<(SocketAddr, usize), TokenError> {
    let mut r = Reader::new(bytes);
    let addr = read_address_from(&mut r)?;
    Ok((addr, bytes.len() - r.rest().len()))
}

pub(crate) fn read_address_from(r: &mut Reader<'_>) -> Result<SocketAddr, TokenError> {
    match r.u8().ok_or(TokenError::Truncated)? {
        ADDRESS_IPV4 => {
            let ip = r.array::<4>().ok_or(TokenError::Truncated)?;
            let port = r.u16().ok_or(TokenError::Truncated)?;
            Ok(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(ip), port)))
        }
        ADDRESS_IPV6 => {
            let mut groups = [0u16; 8];
            for g in &mut groups {
                *g = r.u16().ok_or(TokenError::Truncated)?;
            }
            let port = r.u16().ok_or(TokenError::Truncated)?;
            Ok(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(groups),
                port,
                0,
                0,
            )))
        }
        other => Err(TokenError::BadAddressType(other)),
    }
}
