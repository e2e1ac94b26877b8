//! Whole-message helpers: encode to bytes, decode from bytes, measure in bits.

use crate::error::{ErrorKind, StreamError};
use crate::stream::{MeasureStream, NetMessage, ReadStream, Stream, WriteStream};

/// Encodes `message` into a new byte vector sized by its [`NetMessage::MAX_BITS`].
///
/// Fails when a field is outside its declared range (the error names the field).
/// A shared reference is enough: the message's serialize function runs through `&T`
/// ([`NetMessage::write`], which takes the writer's packed fast path).
///
/// ```
/// # use netproto::NetMessage;
/// #[derive(NetMessage)]
/// struct Ping { #[net(bits = 12)] id: u16 }
/// assert_eq!(netproto::encode(&Ping { id: 4095 }).unwrap(), [0xff, 0x0f]);
/// ```
pub fn encode<T: NetMessage>(message: &T) -> Result<Vec<u8>, StreamError> {
    let mut buf = vec![0u8; T::MAX_BITS.div_ceil(8)];
    let len = encode_into(message, &mut buf)?;
    buf.truncate(len);
    Ok(buf)
}

/// Encodes `message` into `buf` and returns the number of bytes written.
///
/// Fails with [`ErrorKind::BufferFull`] when `buf` is too small (a buffer of
/// `T::MAX_BITS.div_ceil(8)` bytes is always enough).
pub fn encode_into<T: NetMessage>(message: &T, buf: &mut [u8]) -> Result<usize, StreamError> {
    let mut stream = WriteStream::new(buf);
    message.write(&mut stream)?;
    Ok(stream.finish())
}

/// Decodes a `T` that must fill `bytes` exactly (up to the zero padding of its last byte).
///
/// Fails on truncated input, values outside their ranges, bad padding, bad strings,
/// unknown variants, and [`ErrorKind::TrailingBytes`] when whole bytes are left over.
/// Never panics, and never allocates more than the input can justify.
pub fn decode<T: NetMessage>(bytes: &[u8]) -> Result<T, StreamError> {
    let mut stream = ReadStream::new(bytes);
    let mut message = T::blank();
    message.serialize(&mut stream)?;
    if stream.bytes_read() != bytes.len() {
        return Err(StreamError::new(ErrorKind::TrailingBytes));
    }
    Ok(message)
}

/// Decodes a `T` from the start of `bytes` and returns it with the bytes consumed.
pub fn decode_prefix<T: NetMessage>(bytes: &[u8]) -> Result<(T, usize), StreamError> {
    let mut stream = ReadStream::new(bytes);
    let mut message = T::blank();
    message.serialize(&mut stream)?;
    Ok((message, stream.bytes_read()))
}

/// The bits [`encode`] would write, with every align charged 7 bits (an upper bound,
/// exact for messages without aligns). Free at run time for fixed-size messages.
///
/// ```
/// # use netproto::NetMessage;
/// #[derive(NetMessage)]
/// struct Aim { #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))] yaw: f32 }
/// assert_eq!(netproto::measure(&Aim { yaw: 0.5 }), 13);
/// ```
pub fn measure<T: NetMessage>(message: &T) -> usize {
    if T::MIN_BITS == T::MAX_BITS {
        return T::MAX_BITS;
    }
    let mut stream = MeasureStream::new();
    match message.write(&mut stream) {
        Ok(()) => stream.bits_processed(),
        Err(never) => match never {},
    }
}
