//! Error collection: every problem is reported, not just the first one.

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// Collects errors with [`syn::Error::combine`] so that the user sees all of them at once.
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    /// Records an error spanning `tokens`.
    pub(crate) fn spanned<T: ToTokens, M: Display>(&mut self, tokens: T, message: M) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error at `span`.
    pub(crate) fn at<M: Display>(&mut self, span: Span, message: M) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// `Err` with every recorded error, or `Ok` when there are none.
    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.combined {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}
