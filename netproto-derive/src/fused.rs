//! The fast path: runs of consecutive fixed-width fields go on the wire in one
//! `serialize_bits` call of at most 64 bits.
//!
//! Bits are packed least-significant first, so writing `a` (7 bits) then `b` (1 bit) is
//! the same as writing `a | b << 7` in 8 bits: the fused and per-field paths produce the
//! same bytes. On write, every field of a run is range-checked (the error names it)
//! before anything is written; on read, the run is read once, then each field is split
//! off, validated (the error names it) and assigned.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// The widest `serialize_bits` call.
const MAX_RUN_BITS: u32 = 64;

/// One fixed-width field, as the fused code sees it.
#[derive(Clone)]
pub(crate) struct Part {
    pub(crate) width: u32,
    /// `"Type.field"`.
    pub(crate) path: String,
    /// On write: a block that checks the value (naming the field) and evaluates to its
    /// bits, a `u64` below `2^width`.
    pub(crate) write: TokenStream,
    /// On read: statements that validate `__raw` (the field's bits, a `u64`) and assign
    /// the field.
    pub(crate) read: TokenStream,
}

/// A step of the fast path: a field on its own, or a fused run of fixed-width fields.
pub(crate) enum Step<T> {
    Single(T),
    Run(Vec<(Part, T)>),
}

/// Splits fields (in wire order) into steps: consecutive fixed-width fields are grouped,
/// greedily, into runs of at most 64 bits; a run of one field stays a single step.
pub(crate) fn plan<T>(items: Vec<(Option<Part>, T)>) -> Vec<Step<T>> {
    let mut steps = Vec::new();
    let mut run: Vec<(Part, T)> = Vec::new();
    let mut run_bits = 0;
    let close = |run: &mut Vec<(Part, T)>, steps: &mut Vec<Step<T>>| match run.len() {
        0 => {}
        1 => {
            if let Some((_, item)) = run.pop() {
                steps.push(Step::Single(item));
            }
        }
        _ => steps.push(Step::Run(std::mem::take(run))),
    };
    for (part, item) in items {
        match part {
            Some(part) => {
                if run_bits + part.width > MAX_RUN_BITS {
                    close(&mut run, &mut steps);
                    run_bits = 0;
                }
                run_bits += part.width;
                run.push((part, item));
            }
            None => {
                close(&mut run, &mut steps);
                run_bits = 0;
                steps.push(Step::Single(item));
            }
        }
    }
    close(&mut run, &mut steps);
    steps
}

/// The code of a fused run (at least two fields, at most 64 bits in all); `singles` are
/// the fields' own statements, for a stream too short to hold the whole run. Without
/// `reads` (the write path, from a shared reference) no reading branch is generated.
pub(crate) fn run_code(parts: &[&Part], singles: &[&TokenStream], read: bool) -> TokenStream {
    let total: u32 = parts.iter().map(|p| p.width).sum();
    debug_assert!(total <= MAX_RUN_BITS);
    let first = parts.first().map(|p| p.path.as_str()).unwrap_or_default();
    let attribute = quote!(.map_err(|e| __S::in_field(e, #first))?);
    let total_lit = Literal::u32_unsuffixed(total);
    let total_usize = Literal::usize_unsuffixed(total as usize);

    let mut values = Vec::new();
    let mut word = Vec::new();
    let mut reads = Vec::new();
    let mut shift = 0u32;
    for (k, part) in parts.iter().enumerate() {
        let v = quote::format_ident!("__v{}", k);
        let write = &part.write;
        values.push(quote!(let #v: u64 = #write;));
        let read = &part.read;
        if part.width == 0 {
            reads.push(quote!({ let __raw: u64 = 0; #read }));
        } else {
            let mask = Literal::u64_unsuffixed(mask(part.width));
            let raw = if shift == 0 {
                quote!(__word & #mask)
            } else {
                let s = Literal::u32_unsuffixed(shift);
                word.push(quote!(#v << #s));
                quote!((__word >> #s) & #mask)
            };
            if shift == 0 {
                word.push(quote!(#v));
            }
            reads.push(quote!({ let __raw: u64 = #raw; #read }));
        }
        shift += part.width;
    }
    // The write path (`!read`) is only ever run by writers and measurers.
    let read_branch = if read {
        quote!(else if __S::IS_READING { #(#reads)* })
    } else {
        TokenStream::new()
    };
    if total == 0 {
        // Only degenerate ranges (one value each): check on write, assign on read.
        return quote! {
            if __S::IS_WRITING {
                #(#values)*
            } #read_branch
        };
    }
    let read_branch = if read {
        quote! {
            else {
                let mut __word: u64 = 0;
                stream.serialize_bits(&mut __word, #total_lit) #attribute;
                #(#reads)*
            }
        }
    } else {
        TokenStream::new()
    };
    // Writing: on the read path only for a writer; the write path has no other stream
    // left here (a measurer took the first branch).
    let write_branch = if read {
        quote!(else if __S::IS_WRITING)
    } else {
        quote!(else)
    };
    quote! {
        if !__S::IS_WRITING && !__S::IS_READING {
            stream.serialize_bits(&mut 0u64, #total_lit) #attribute;
        } else if stream.bits_remaining() < #total_usize {
            // The run does not fit: go field by field, so that the error names the field
            // that runs out, exactly as the per-field path does.
            #(#singles)*
        } #write_branch {
            #(#values)*
            let mut __word: u64 = #(#word)|*;
            stream.serialize_bits(&mut __word, #total_lit) #attribute;
        } #read_branch
    }
}

/// A fixed-width field read on its own: its bits, then its part's checks and
/// assignment. The same errors as the field's `serialize` statement, without a call the
/// compiler may keep out of line (which would pin the reader's state to memory).
pub(crate) fn read_single(part: &Part) -> TokenStream {
    let read = &part.read;
    if part.width == 0 {
        return quote!({ let __raw: u64 = 0; #read });
    }
    let path = part.path.as_str();
    let width = Literal::u32_unsuffixed(part.width);
    quote!({
        let mut __raw: u64 = 0;
        stream.serialize_bits(&mut __raw, #width).map_err(|e| __S::in_field(e, #path))?;
        #read
    })
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}
