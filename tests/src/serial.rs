//! One test at a time within a test binary, for the binaries where one test captures
//! `tracing` events with a thread-local subscriber while the others log the same
//! events on other threads: tracing's interest cache is global, and a callsite first
//! hit on another thread at the wrong moment can stay registered as never enabled for
//! the capturing thread (seen once in CI, `connection_client.rs`).

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Holds the binary's lock while alive: call first thing in every test of the binary.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}
