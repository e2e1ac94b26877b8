//! Message sets: `#[net(message_set)]` on an enum whose variants each wrap one message
//! type makes it the message factory (`netproto::MessageSet`), with `From` for each
//! payload and, with `max_bits = N`, a compile-time bound on every message's size.
//!
//! Split like the derive itself: `check` validates the type-level attributes against the
//! enum and resolves them to a [`SetDecl`] (collecting every error); `codegen` generates
//! the impls from the checked model, and the stub emitted beside errors.

mod check;
mod codegen;

use proc_macro2::TokenStream;

pub(crate) use check::declare;
pub(crate) use codegen::{expand, moves, stub};

/// A checked `#[net(message_set, max_bits = N)]`.
pub(crate) struct SetDecl {
    /// `max_bits`, as a `usize` expression, and its value as written (for the message of
    /// the assertion that checks each payload against it).
    pub(crate) max_bits: Option<(TokenStream, String)>,
}
