//! The key loader as a server uses it: a private key from an environment variable or
//! a file, as hex or base64, and the exact text of every error it can give (an insta
//! snapshot), none of which shows the key.
//!
//! Setting an environment variable in a running test is `unsafe` (other threads may
//! read the environment), which the workspace forbids: the test that loads keys from
//! variables runs itself again as a child process with the variables set.

use std::path::{Path, PathBuf};
use std::process::Command;

use netproto::netcode::{Key, KeyError, MAX_KEY_FILE_BYTES};

/// The key 00 01 02 .. 1f, and its hex and standard base64 spellings.
const HEX: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const BASE64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// Set (to anything) in the child process of `keys_load_from_environment_variables`.
const CHILD: &str = "NETPROTO_KEY_LOADING_CHILD";

fn key() -> Key {
    Key::from_bytes(std::array::from_fn(|i| i as u8))
}

/// A directory of this test's own under the temporary directory, made empty.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "netproto-key-loading-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

fn write(dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write a key file");
    path
}

/// `Display` text of an error, with `dir` shown as `$DIR`.
fn message(error: &KeyError, dir: &Path) -> String {
    error
        .to_string()
        .replace(&dir.display().to_string(), "$DIR")
}

#[test]
fn keys_load_from_files() {
    let dir = scratch_dir("files");
    let hex = write(&dir, "hex", format!("{HEX}\n").as_bytes());
    let base64 = write(&dir, "base64", format!("{BASE64}\r\n").as_bytes());
    let url = write(&dir, "url", BASE64.trim_end_matches('=').as_bytes());
    assert_eq!(Key::from_file(&hex).expect("hex file"), key());
    assert_eq!(Key::from_file(&base64).expect("base64 file"), key());
    assert_eq!(Key::from_file(&url).expect("unpadded base64 file"), key());
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
}

/// Every kind of error, as an operator reads it in a server's log.
#[test]
fn error_messages() {
    let dir = scratch_dir("errors");
    let mut large = format!("{HEX}\n").into_bytes();
    large.resize(MAX_KEY_FILE_BYTES + 1, b'\n');
    let cases: Vec<(&str, KeyError)> = vec![
        ("from_hex(\"\")", Key::from_hex("").expect_err("empty")),
        (
            "from_hex(62 digits)",
            Key::from_hex(&HEX[..62]).expect_err("31 bytes"),
        ),
        (
            "from_hex(63 digits)",
            Key::from_hex(&HEX[..63]).expect_err("odd"),
        ),
        (
            "from_hex(a 'g')",
            Key::from_hex(&format!("{}g", &HEX[..63])).expect_err("not hex"),
        ),
        (
            "from_base64(16 bytes)",
            Key::from_base64("AAECAwQFBgcICQoLDA0ODw==").expect_err("16 bytes"),
        ),
        (
            "from_base64(a '*')",
            Key::from_base64(&format!("{}*=", &BASE64[..42])).expect_err("not base64"),
        ),
        (
            "from_text(\"not a key!\")",
            Key::from_text("not a key!").expect_err("neither"),
        ),
        (
            "from_env(unset)",
            Key::from_env("NETPROTO_KEY_LOADING_NEVER_SET").expect_err("unset"),
        ),
        (
            "from_file(missing)",
            Key::from_file(dir.join("missing")).expect_err("missing"),
        ),
        (
            "from_file(too large)",
            Key::from_file(write(&dir, "large", &large)).expect_err("large"),
        ),
        (
            "from_file(16 bytes of hex)",
            Key::from_file(write(&dir, "short", &HEX.as_bytes()[..32])).expect_err("short"),
        ),
        (
            "from_file(not UTF-8)",
            Key::from_file(write(&dir, "binary", &[0xff, 0xfe, 0xfd])).expect_err("binary"),
        ),
    ];
    let text: String = cases
        .iter()
        .map(|(call, error)| format!("{call}\n  {}\n", message(error, &dir)))
        .collect();
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
    insta::assert_snapshot!(text);
}

/// Runs in two roles: in the test run it starts the test binary again with
/// environment variables set, running only this test; in that child it loads them.
#[test]
fn keys_load_from_environment_variables() {
    if std::env::var_os(CHILD).is_some() {
        assert_eq!(Key::from_env("NETPROTO_TEST_KEY_HEX").expect("hex"), key());
        assert_eq!(
            Key::from_env("NETPROTO_TEST_KEY_BASE64").expect("b64"),
            key()
        );
        let short = Key::from_env("NETPROTO_TEST_KEY_SHORT").expect_err("short");
        assert_eq!(
            short.to_string(),
            "environment variable NETPROTO_TEST_KEY_SHORT: the key is 16 bytes long, expected 32"
        );
        assert!(matches!(
            &short,
            KeyError::InEnv { var, error } if var == "NETPROTO_TEST_KEY_SHORT"
                && matches!(**error, KeyError::WrongLength { found: 16, expected: 32 })
        ));
        let empty = Key::from_env("NETPROTO_TEST_KEY_EMPTY").expect_err("empty");
        assert!(matches!(
            &empty,
            KeyError::InEnv { error, .. } if matches!(**error, KeyError::Empty)
        ));
        #[cfg(unix)]
        {
            let not_unicode = Key::from_env("NETPROTO_TEST_KEY_NOT_UNICODE").expect_err("bytes");
            assert_eq!(
                not_unicode.to_string(),
                "environment variable NETPROTO_TEST_KEY_NOT_UNICODE is not valid UTF-8"
            );
        }
        return;
    }
    let mut child = Command::new(std::env::current_exe().expect("the test binary"));
    child
        .args([
            "--exact",
            "keys_load_from_environment_variables",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("NETPROTO_TEST_KEY_HEX", format!("  {HEX}\n"))
        .env("NETPROTO_TEST_KEY_BASE64", BASE64)
        .env("NETPROTO_TEST_KEY_SHORT", &HEX[..32])
        .env("NETPROTO_TEST_KEY_EMPTY", " \n");
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        child.env(
            "NETPROTO_TEST_KEY_NOT_UNICODE",
            std::ffi::OsStr::from_bytes(b"\xff\xfe"),
        );
    }
    let output = child.output().expect("run the test binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
