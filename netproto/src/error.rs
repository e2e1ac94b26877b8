//! The error type of the bit streams: small, `Copy`, and naming the field it came from.

use core::fmt;

/// What went wrong while writing or reading a bit stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The reader needed more bits than the buffer holds.
    PastEnd,
    /// The writer's buffer is too small for the message.
    BufferFull,
    /// A value is outside its declared range (on write), or a value read from the
    /// wire lies in the bit headroom above its range (on read).
    OutOfRange,
    /// Alignment padding read from the wire is not all zero bits.
    NonZeroPadding,
    /// A string read from the wire is not valid UTF-8 or contains a NUL byte.
    InvalidString,
    /// A sequence or string is longer than its declared `max_len`.
    TooLong,
    /// An enum variant index or message type id read from the wire is unknown.
    UnknownVariant,
    /// A relative integer is not greater than the previous value.
    NotIncreasing,
    /// The decoded message did not consume the whole buffer (see [`crate::decode`]).
    TrailingBytes,
}

impl ErrorKind {
    /// A short human-readable description.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::PastEnd => "read past the end of the buffer",
            Self::BufferFull => "the write buffer is too small",
            Self::OutOfRange => "value outside its declared range",
            Self::NonZeroPadding => "non-zero alignment padding",
            Self::InvalidString => "string is not valid UTF-8 or contains NUL",
            Self::TooLong => "length above the declared max_len",
            Self::UnknownVariant => "unknown enum variant or message type",
            Self::NotIncreasing => "relative integer is not increasing",
            Self::TrailingBytes => "bytes left over after the message",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// The error of [`WriteStream`](crate::WriteStream) and [`ReadStream`](crate::ReadStream).
///
/// It is `Copy` and two words wide so that the `Ok` path stays cheap. `field` names the
/// innermost field that failed, as `"Type.field"`, when the failure happened inside a
/// derived [`NetMessage`](crate::NetMessage).
///
/// ```
/// use netproto::{ErrorKind, NetMessage};
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct Health {
///     #[net(range = 0..=100)]
///     hp: u8,
/// }
///
/// let err = netproto::encode(&Health { hp: 150 }).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::OutOfRange);
/// assert_eq!(err.field(), Some("Health.hp"));
/// assert_eq!(err.to_string(), "Health.hp: value outside its declared range");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamError {
    kind: ErrorKind,
    field: Option<&'static str>,
}

impl StreamError {
    /// An error of `kind` not yet attributed to a field.
    pub const fn new(kind: ErrorKind) -> Self {
        Self { kind, field: None }
    }

    /// What went wrong.
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The innermost field (`"Type.field"`) being serialized when it went wrong, if known.
    pub const fn field(&self) -> Option<&'static str> {
        self.field
    }

    /// Attributes the error to `field` unless an inner field already claimed it.
    #[must_use]
    pub const fn in_field(mut self, field: &'static str) -> Self {
        if self.field.is_none() {
            self.field = Some(field);
        }
        self
    }
}

impl From<ErrorKind> for StreamError {
    fn from(kind: ErrorKind) -> Self {
        Self::new(kind)
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field {
            Some(field) => write!(f, "{field}: {}", self.kind),
            None => fmt::Display::fmt(&self.kind, f),
        }
    }
}

impl std::error::Error for StreamError {}
