//! Keys, their loading from text, environment variables and files, and OS randomness.
//!
//! A [`Key`] is wiped (overwritten with zeros) when it is dropped and compares in
//! constant time. Loading one ([`Key::from_hex`], [`Key::from_base64`],
//! [`Key::from_text`], [`Key::from_env`], [`Key::from_file`]) wipes every buffer that
//! held the encoded or decoded key, and its errors ([`KeyError`]) never contain any of
//! the key's characters.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64ct::{Base64, Base64Unpadded, Base64Url, Base64UrlUnpadded, Encoding};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use super::KEY_BYTES;

/// Hex digits of an encoded key (two per byte).
const HEX_DIGITS: usize = KEY_BYTES * 2;
/// Base64 characters of an encoded key, with its `=` padding.
const BASE64_CHARS: usize = KEY_BYTES.div_ceil(3) * 4;

/// The most bytes [`Key::from_file`] reads: a key file holds 64 hex digits or 44
/// base64 characters and a newline, so anything longer is not a key file (and a
/// device such as `/dev/zero` given by mistake is not read without end).
pub const MAX_KEY_FILE_BYTES: usize = 1024;

/// A 32-byte symmetric key: the backend's private key, a session key or a server's
/// challenge key.
///
/// Its `Debug` output never shows the bytes, its bytes are overwritten with zeros when
/// it is dropped ([`ZeroizeOnDrop`]), and `==` compares two keys in constant time
/// ([`subtle::ConstantTimeEq`]): how long a comparison takes says nothing about where
/// the keys differ. Copies made with [`as_bytes`](Self::as_bytes) or `clone` are the
/// caller's to look after (a clone is a `Key`, wiped in turn).
///
/// ```
/// use netproto::netcode::Key;
///
/// let key = Key::from_bytes([1; 32]);
/// assert_eq!(format!("{key:?}"), "Key(..)");
/// assert_ne!(Key::random(), Key::random());
/// ```
///
/// A server loads the private key it shares with the backend from its configuration,
/// as hex or base64:
///
/// ```
/// use netproto::netcode::Key;
///
/// let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
/// let base64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// assert_eq!(Key::from_hex(hex)?, Key::from_base64(base64)?);
/// assert_eq!(Key::from_text(base64)?, Key::from_text(hex)?); // either, detected
/// # Ok::<(), netproto::netcode::KeyError>(())
/// ```
#[derive(Clone)]
pub struct Key([u8; KEY_BYTES]);

impl Key {
    /// The key with these bytes.
    pub const fn from_bytes(bytes: [u8; KEY_BYTES]) -> Self {
        Self(bytes)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }

    /// A fresh key from the operating system's random number generator.
    ///
    /// # Panics
    ///
    /// Only if the OS random number generator fails (see `random_bytes`).
    pub fn random() -> Self {
        let mut key = Self([0; KEY_BYTES]);
        fill_random(&mut key.0);
        key
    }

    /// The key written as 64 hex digits (either case; whitespace around them is
    /// ignored), as `openssl rand -hex 32` prints one.
    ///
    /// # Errors
    ///
    /// [`KeyError::Empty`] for an empty string, [`KeyError::NotHex`] when it is not an
    /// even number of hex digits, [`KeyError::WrongLength`] when they are not 32 bytes.
    ///
    /// ```
    /// use netproto::netcode::{Key, KeyError};
    ///
    /// let key = Key::from_hex("  000102030405060708090A0B0C0D0E0F101112131415161718191a1b1c1d1e1f\n")?;
    /// assert_eq!(key.as_bytes()[31], 0x1f);
    /// assert!(matches!(Key::from_hex("00ff"), Err(KeyError::WrongLength { found: 2, expected: 32 })));
    /// # Ok::<(), KeyError>(())
    /// ```
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let text = non_empty(text)?;
        // An odd number of digits is not hex; an even number decodes to half as many
        // bytes, which is the length reported when it is not 32.
        if text.len() % 2 != 0 {
            return Err(KeyError::NotHex);
        }
        let mut decoded = Zeroizing::new(vec![0u8; text.len() / 2]);
        let bytes = base16ct::mixed::decode(text, &mut decoded).map_err(|_| KeyError::NotHex)?;
        Self::from_decoded(bytes)
    }

    /// The key written as base64 (RFC 4648: the standard alphabet or the URL-safe
    /// one, with or without `=` padding; whitespace around it is ignored), as
    /// `openssl rand -base64 32` prints one.
    ///
    /// # Errors
    ///
    /// [`KeyError::Empty`] for an empty string, [`KeyError::NotBase64`] when it is
    /// not base64, [`KeyError::WrongLength`] when it does not decode to 32 bytes.
    ///
    /// ```
    /// use netproto::netcode::{Key, KeyError};
    ///
    /// let key = Key::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")?;
    /// assert_eq!(key.as_bytes()[1], 1);
    /// assert!(matches!(Key::from_base64("AAEC"), Err(KeyError::WrongLength { found: 3, expected: 32 })));
    /// # Ok::<(), KeyError>(())
    /// ```
    pub fn from_base64(text: &str) -> Result<Self, KeyError> {
        let text = non_empty(text)?;
        // Base64 never decodes to more bytes than it has characters.
        let mut decoded = Zeroizing::new(vec![0u8; text.len()]);
        let text = text.as_bytes();
        let len = decode_base64::<Base64>(text, &mut decoded)
            .or_else(|| decode_base64::<Base64Unpadded>(text, &mut decoded))
            .or_else(|| decode_base64::<Base64Url>(text, &mut decoded))
            .or_else(|| decode_base64::<Base64UrlUnpadded>(text, &mut decoded))
            .ok_or(KeyError::NotBase64)?;
        Self::from_decoded(&decoded[..len])
    }

    /// The key written as hex or base64 (whitespace around it is ignored): hex when
    /// every character is a hex digit, base64 otherwise. (A 32-byte key in base64 is
    /// 43 or 44 characters, never an even number of hex digits.)
    ///
    /// # Errors
    ///
    /// [`KeyError::Empty`] for an empty string, [`KeyError::NotHexOrBase64`] when it is
    /// neither, [`KeyError::NotHex`] for an odd number of hex digits,
    /// [`KeyError::WrongLength`] when it does not decode to 32 bytes.
    ///
    /// ```
    /// use netproto::netcode::{Key, KeyError};
    ///
    /// assert_eq!(Key::from_text(&"ab".repeat(32))?, Key::from_bytes([0xab; 32]));
    /// assert_eq!(Key::from_text("q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=")?, Key::from_bytes([0xab; 32]));
    /// assert!(matches!(Key::from_text("not a key!"), Err(KeyError::NotHexOrBase64)));
    /// # Ok::<(), KeyError>(())
    /// ```
    pub fn from_text(text: &str) -> Result<Self, KeyError> {
        let text = non_empty(text)?;
        if text.bytes().all(|b| b.is_ascii_hexdigit()) {
            Self::from_hex(text)
        } else {
            Self::from_base64(text).map_err(|error| match error {
                KeyError::NotBase64 => KeyError::NotHexOrBase64,
                error => error,
            })
        }
    }

    /// The key in the environment variable `var`, as hex or base64 (see
    /// [`from_text`](Self::from_text); surrounding whitespace is ignored). The copy
    /// read is wiped; the process environment keeps its own.
    ///
    /// # Errors
    ///
    /// [`KeyError::EnvUnset`] when the variable is not set,
    /// [`KeyError::EnvNotUnicode`] when it is not UTF-8, and [`KeyError::InEnv`]
    /// (naming the variable) around the reason its value is not a key.
    ///
    /// ```no_run
    /// use netproto::netcode::Key;
    ///
    /// // e.g. NETPROTO_PRIVATE_KEY=$(openssl rand -hex 32) in the server's secret store
    /// let private_key = Key::from_env("NETPROTO_PRIVATE_KEY")?;
    /// # Ok::<(), netproto::netcode::KeyError>(())
    /// ```
    pub fn from_env(var: &str) -> Result<Self, KeyError> {
        let value = match std::env::var(var) {
            Ok(value) => Zeroizing::new(value),
            Err(std::env::VarError::NotPresent) => {
                return Err(KeyError::EnvUnset {
                    var: var.to_owned(),
                });
            }
            Err(std::env::VarError::NotUnicode(value)) => {
                drop(Zeroizing::new(value.into_encoded_bytes()));
                return Err(KeyError::EnvNotUnicode {
                    var: var.to_owned(),
                });
            }
        };
        Self::from_text(&value).map_err(|error| KeyError::InEnv {
            var: var.to_owned(),
            error: Box::new(error),
        })
    }

    /// The key in the file at `path`, as hex or base64 (see
    /// [`from_text`](Self::from_text); surrounding whitespace, such as the final
    /// newline, is ignored). At most [`MAX_KEY_FILE_BYTES`] are read, into a buffer
    /// that is wiped.
    ///
    /// # Errors
    ///
    /// [`KeyError::FileUnreadable`] (with the path and the I/O error) when the file
    /// cannot be opened or read, [`KeyError::FileTooLarge`] when it holds more than
    /// [`MAX_KEY_FILE_BYTES`], and [`KeyError::InFile`] (naming the path) around the
    /// reason its contents are not a key.
    ///
    /// ```no_run
    /// use netproto::netcode::Key;
    ///
    /// // e.g. a file mounted from the orchestrator's secret store
    /// let private_key = Key::from_file("/run/secrets/netproto_private_key")?;
    /// # Ok::<(), netproto::netcode::KeyError>(())
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let unreadable = |error| KeyError::FileUnreadable {
            path: path.to_owned(),
            error,
        };
        let file = std::fs::File::open(path).map_err(unreadable)?;
        // Room for one byte past the limit, reserved up front: the buffer never grows,
        // so no copy of the key is left behind in a freed allocation.
        let mut contents = Zeroizing::new(Vec::with_capacity(MAX_KEY_FILE_BYTES + 1));
        file.take(MAX_KEY_FILE_BYTES as u64 + 1)
            .read_to_end(&mut contents)
            .map_err(unreadable)?;
        if contents.len() > MAX_KEY_FILE_BYTES {
            return Err(KeyError::FileTooLarge {
                path: path.to_owned(),
                limit: MAX_KEY_FILE_BYTES,
            });
        }
        let in_file = |error| KeyError::InFile {
            path: path.to_owned(),
            error: Box::new(error),
        };
        let text = std::str::from_utf8(&contents).map_err(|_| in_file(KeyError::NotHexOrBase64))?;
        Self::from_text(text).map_err(in_file)
    }

    /// The key of decoded bytes, which must be exactly [`KEY_BYTES`].
    fn from_decoded(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() != KEY_BYTES {
            return Err(KeyError::WrongLength {
                found: bytes.len(),
                expected: KEY_BYTES,
            });
        }
        let mut key = Self([0; KEY_BYTES]);
        key.0.copy_from_slice(bytes);
        Ok(key)
    }
}

/// Decodes `text` into `out` with one base64 variant; the decoded length.
fn decode_base64<E: Encoding>(text: &[u8], out: &mut [u8]) -> Option<usize> {
    E::decode(text, out).ok().map(<[u8]>::len)
}

/// `text` without surrounding whitespace, refused when nothing is left.
fn non_empty(text: &str) -> Result<&str, KeyError> {
    match text.trim() {
        "" => Err(KeyError::Empty),
        text => Ok(text),
    }
}

impl PartialEq for Key {
    /// Constant time: every byte is compared whatever the first difference.
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for Key {}

impl Drop for Key {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl ZeroizeOnDrop for Key {}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
    }
}

/// Why a key could not be loaded ([`Key::from_hex`], [`Key::from_base64`],
/// [`Key::from_text`], [`Key::from_env`], [`Key::from_file`]). No message or `Debug`
/// output contains any character of the key: only lengths, variable names and paths.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Nothing but whitespace.
    #[error(
        "the key is empty: expected {KEY_BYTES} bytes as {HEX_DIGITS} hex digits or {BASE64_CHARS} base64 characters"
    )]
    Empty,
    /// Well-formed hex or base64 that is not 32 bytes.
    #[error("the key is {found} bytes long, expected {expected}")]
    WrongLength {
        /// Bytes the text decodes to.
        found: usize,
        /// Bytes of a key: always [`KEY_BYTES`] (32).
        expected: usize,
    },
    /// Not an even number of hex digits ([`Key::from_hex`], or [`Key::from_text`] on
    /// an odd number of hex digits).
    #[error("the key is not hex: expected {HEX_DIGITS} hex digits")]
    NotHex,
    /// Not base64 in any of the alphabets and paddings [`Key::from_base64`] accepts.
    #[error("the key is not base64: expected {BASE64_CHARS} base64 characters")]
    NotBase64,
    /// Neither hex nor base64 ([`Key::from_text`], [`Key::from_env`],
    /// [`Key::from_file`]).
    #[error("the key is neither hex ({HEX_DIGITS} digits) nor base64 ({BASE64_CHARS} characters)")]
    NotHexOrBase64,
    /// [`Key::from_env`]: the variable is not set.
    #[error("environment variable {var} is not set")]
    EnvUnset {
        /// The variable's name.
        var: String,
    },
    /// [`Key::from_env`]: the variable's value is not valid UTF-8.
    #[error("environment variable {var} is not valid UTF-8")]
    EnvNotUnicode {
        /// The variable's name.
        var: String,
    },
    /// [`Key::from_env`]: the variable's value is not a key.
    #[error("environment variable {var}: {error}")]
    InEnv {
        /// The variable's name.
        var: String,
        /// Why its value is not a key.
        error: Box<KeyError>,
    },
    /// [`Key::from_file`]: the file cannot be opened or read.
    #[error("cannot read key file {}: {error}", path.display())]
    FileUnreadable {
        /// The path given.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// [`Key::from_file`]: the file holds more than [`MAX_KEY_FILE_BYTES`].
    #[error("key file {} is larger than {limit} bytes: not a key file", path.display())]
    FileTooLarge {
        /// The path given.
        path: PathBuf,
        /// [`MAX_KEY_FILE_BYTES`].
        limit: usize,
    },
    /// [`Key::from_file`]: the file's contents are not a key.
    #[error("key file {}: {error}", path.display())]
    InFile {
        /// The path given.
        path: PathBuf,
        /// Why its contents are not a key.
        error: Box<KeyError>,
    },
}

/// Fills `bytes` from the operating system's random number generator.
///
/// # Panics
///
/// Only if the OS random number generator fails: there is no safe fallback for key and
/// nonce material, so this does not return weak bytes.
fn fill_random(bytes: &mut [u8]) {
    if let Err(e) = getrandom::fill(bytes) {
        panic!("the OS random number generator failed: {e}");
    }
}

/// `N` bytes from the operating system's random number generator (nonces, keys).
///
/// # Panics
///
/// Only if the OS random number generator fails: there is no safe fallback for key and
/// nonce material, so this does not return weak bytes.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    fill_random(&mut bytes);
    bytes
}

/// A `u64` from the operating system's random number generator.
///
/// # Panics
///
/// Only if the OS random number generator fails (see `random_bytes`).
pub fn random_u64() -> u64 {
    u64::from_le_bytes(random_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key 00 01 02 .. 1f, and its hex and standard base64 spellings.
    const BYTES: [u8; 32] = {
        let mut bytes = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            bytes[i] = i as u8;
            i += 1;
        }
        bytes
    };
    const HEX: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const BASE64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    /// A path under the temporary directory, unique to this process and `name`.
    fn temp_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("netproto-key-{}-{name}", std::process::id()))
    }

    /// Writes `contents` to a fresh temporary file and loads it with `from_file`.
    fn load_file(name: &str, contents: &[u8]) -> (PathBuf, Result<Key, KeyError>) {
        let path = temp_path(name);
        std::fs::write(&path, contents).unwrap();
        let result = Key::from_file(&path);
        std::fs::remove_file(&path).unwrap();
        (path, result)
    }

    fn assert_wipes_on_drop<T: ZeroizeOnDrop>() {}

    #[test]
    fn keys_and_token_plaintexts_are_wiped_on_drop() {
        assert_wipes_on_drop::<Key>();
        assert_wipes_on_drop::<super::super::ConnectTokenPrivate>();
        assert_wipes_on_drop::<super::super::ChallengeToken>();
    }

    #[test]
    fn equality_compares_every_byte() {
        let key = Key::from_bytes(BYTES);
        assert_eq!(key, Key::from_bytes(BYTES));
        assert_eq!(key, key.clone());
        for i in 0..KEY_BYTES {
            for bit in 0..8 {
                let mut other = BYTES;
                other[i] ^= 1 << bit;
                assert_ne!(key, Key::from_bytes(other), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn hex_loads_in_either_case_with_whitespace() {
        let key = Key::from_bytes(BYTES);
        assert_eq!(Key::from_hex(HEX).unwrap(), key);
        assert_eq!(Key::from_hex(&HEX.to_uppercase()).unwrap(), key);
        assert_eq!(Key::from_hex(&format!(" \t{HEX}\r\n")).unwrap(), key);
    }

    #[test]
    fn base64_loads_in_every_alphabet_and_padding() {
        let key = Key::from_bytes([0xfb; 32]); // base64 with '+' and '/' (or '-', '_')
        let standard = "+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/s=";
        let url = standard.replace('+', "-").replace('/', "_");
        for text in [
            standard,
            standard.trim_end_matches('='),
            &url,
            url.trim_end_matches('='),
        ] {
            assert_eq!(Key::from_base64(text).unwrap(), key, "{text}");
            assert_eq!(Key::from_text(text).unwrap(), key, "{text}");
        }
        assert_eq!(
            Key::from_base64(&format!("\n{BASE64}\n")).unwrap(),
            Key::from_bytes(BYTES)
        );
    }

    #[test]
    fn text_detects_hex_and_base64() {
        let key = Key::from_bytes(BYTES);
        assert_eq!(Key::from_text(HEX).unwrap(), key);
        assert_eq!(Key::from_text(BASE64).unwrap(), key);
        // 64 characters that are all hex digits are hex, never base64 (which would
        // decode them to 48 bytes).
        assert_eq!(
            Key::from_text(&"ab".repeat(32)).unwrap(),
            Key::from_bytes([0xab; 32])
        );
    }

    #[test]
    fn empty_text_is_refused() {
        for text in ["", "  ", "\n\t"] {
            assert!(matches!(Key::from_hex(text), Err(KeyError::Empty)));
            assert!(matches!(Key::from_base64(text), Err(KeyError::Empty)));
            assert!(matches!(Key::from_text(text), Err(KeyError::Empty)));
        }
    }

    #[test]
    fn wrong_lengths_report_the_length_found() {
        for (hex, found) in [("00", 1), (&HEX[..62], 31), (&format!("{HEX}00"), 33)] {
            let result = Key::from_hex(hex);
            assert!(
                matches!(result, Err(KeyError::WrongLength { found: f, expected: 32 }) if f == found),
                "{hex}: {result:?}"
            );
            let result = Key::from_text(hex);
            assert!(
                matches!(result, Err(KeyError::WrongLength { found: f, expected: 32 }) if f == found),
                "{hex}: {result:?}"
            );
        }
        // 16 and 48 bytes in base64.
        for (text, found) in [
            ("AAECAwQFBgcICQoLDA0ODw==", 16),
            (
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v",
                48,
            ),
        ] {
            let result = Key::from_base64(text);
            assert!(
                matches!(result, Err(KeyError::WrongLength { found: f, expected: 32 }) if f == found),
                "{text}: {result:?}"
            );
        }
    }

    #[test]
    fn malformed_text_is_refused() {
        // Not hex: a letter past f, an odd number of digits, a space inside.
        let odd = &HEX[..63];
        let not_hex = format!("{}g", &HEX[..63]);
        let spaced = format!("{} {}", &HEX[..32], &HEX[32..]);
        for text in [not_hex.as_str(), odd, spaced.as_str()] {
            assert!(
                matches!(Key::from_hex(text), Err(KeyError::NotHex)),
                "{text}"
            );
        }
        assert!(matches!(Key::from_text(odd), Err(KeyError::NotHex)));
        // Not base64: a character outside both alphabets, padding in the middle, a
        // dangling character.
        for text in [
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh*=",
            "AAECAwQFBgcICQoLDA0ODxAR=hMUFRYXGBkaGxwdHh8=",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=A",
        ] {
            assert!(
                matches!(Key::from_base64(text), Err(KeyError::NotBase64)),
                "{text}"
            );
            assert!(
                matches!(Key::from_text(text), Err(KeyError::NotHexOrBase64)),
                "{text}"
            );
        }
    }

    #[test]
    fn env_variable_unset_is_named() {
        let var = "NETPROTO_TEST_KEY_THAT_IS_NEVER_SET";
        match Key::from_env(var) {
            Err(KeyError::EnvUnset { var: v }) => assert_eq!(v, var),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn files_load_hex_and_base64() {
        let key = Key::from_bytes(BYTES);
        assert_eq!(
            load_file("hex", format!("{HEX}\n").as_bytes()).1.unwrap(),
            key
        );
        assert_eq!(
            load_file("b64", format!("{BASE64}\n").as_bytes())
                .1
                .unwrap(),
            key
        );
        let mut largest = format!("{HEX}\n").into_bytes();
        largest.resize(MAX_KEY_FILE_BYTES, b' ');
        assert_eq!(load_file("largest", &largest).1.unwrap(), key);
    }

    #[test]
    fn file_errors_name_the_path() {
        let missing = temp_path("missing");
        match Key::from_file(&missing) {
            Err(KeyError::FileUnreadable { path, error }) => {
                assert_eq!(path, missing);
                assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        // A directory opens on Unix but cannot be read.
        let dir = std::env::temp_dir();
        assert!(matches!(
            Key::from_file(&dir),
            Err(KeyError::FileUnreadable { path, .. }) if path == dir
        ));

        let mut large = format!("{HEX}\n").into_bytes();
        large.resize(MAX_KEY_FILE_BYTES + 1, b' ');
        match load_file("large", &large) {
            (p, Err(KeyError::FileTooLarge { path, limit })) => {
                assert_eq!((path, limit), (p, MAX_KEY_FILE_BYTES));
            }
            (_, other) => panic!("{other:?}"),
        }

        let (p, result) = load_file("short", b"00ff\n");
        match result {
            Err(KeyError::InFile { path, error }) => {
                assert_eq!(path, p);
                assert!(matches!(
                    *error,
                    KeyError::WrongLength {
                        found: 2,
                        expected: 32
                    }
                ));
            }
            other => panic!("{other:?}"),
        }
        for (name, contents) in [("binary", &[0xff, 0xfe, 0x00][..]), ("text", b"a key\n")] {
            let (p, result) = load_file(name, contents);
            match result {
                Err(KeyError::InFile { path, error }) => {
                    assert_eq!(path, p);
                    assert!(matches!(*error, KeyError::NotHexOrBase64), "{name}");
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        let (_, result) = load_file("empty", b"\n");
        assert!(
            matches!(result, Err(KeyError::InFile { error, .. }) if matches!(*error, KeyError::Empty))
        );
    }

    #[test]
    fn errors_and_debug_never_show_the_key() {
        // Every error from a near-miss of the key: none contains a run of its
        // characters, in its message or its Debug output.
        let path = temp_path("secret");
        let near_misses = [
            format!("{HEX}00"),
            HEX[..63].to_owned(),
            format!("{}g", &HEX[..63]),
            format!("{BASE64}A"),
            format!("{}*", &BASE64[..43]),
        ];
        for text in &near_misses {
            for error in [
                Key::from_hex(text).unwrap_err(),
                Key::from_base64(text).unwrap_err(),
                Key::from_text(text).unwrap_err(),
                load_file("secret", text.as_bytes()).1.unwrap_err(),
            ] {
                for shown in [error.to_string(), format!("{error:?}")] {
                    let shown = shown.replace(&path.display().to_string(), "");
                    for secret in [HEX, BASE64] {
                        for window in secret.as_bytes().windows(8) {
                            let window = std::str::from_utf8(window).unwrap();
                            assert!(!shown.contains(window), "{shown} shows {window}");
                        }
                    }
                }
            }
        }
        assert_eq!(format!("{:?}", Key::from_bytes(BYTES)), "Key(..)");
    }
}
