//! `#[derive(NetMessage)]` for netproto. See the `netproto` crate for documentation.

use proc_macro::TokenStream;

/// Derives `netproto::NetMessage`.
#[proc_macro_derive(NetMessage, attributes(net))]
pub fn derive_net_message(input: TokenStream) -> TokenStream {
    let _ = input;
    TokenStream::new()
}
