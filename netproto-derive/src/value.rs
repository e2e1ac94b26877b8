//! What the macro can know by itself: the primitive types it recognises by name and the
//! value of literal bounds. Anything else is left to a `const` assertion.

use proc_macro2::{Ident, Span};
use syn::spanned::Spanned;
use syn::{Expr, GenericArgument, Lit, PathArguments, Type, UnOp};

/// The integer types a ranged field can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntTy {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
}

impl IntTy {
    const ALL: [IntTy; 8] = [
        IntTy::U8,
        IntTy::U16,
        IntTy::U32,
        IntTy::U64,
        IntTy::I8,
        IntTy::I16,
        IntTy::I32,
        IntTy::I64,
    ];

    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    pub(crate) const fn name(self) -> &'static str {
        match self {
            IntTy::U8 => "u8",
            IntTy::U16 => "u16",
            IntTy::U32 => "u32",
            IntTy::U64 => "u64",
            IntTy::I8 => "i8",
            IntTy::I16 => "i16",
            IntTy::I32 => "i32",
            IntTy::I64 => "i64",
        }
    }

    pub(crate) const fn bits(self) -> u32 {
        match self {
            IntTy::U8 | IntTy::I8 => 8,
            IntTy::U16 | IntTy::I16 => 16,
            IntTy::U32 | IntTy::I32 => 32,
            IntTy::U64 | IntTy::I64 => 64,
        }
    }

    pub(crate) const fn signed(self) -> bool {
        matches!(self, IntTy::I8 | IntTy::I16 | IntTy::I32 | IntTy::I64)
    }

    pub(crate) const fn min(self) -> i128 {
        if self.signed() {
            -(1i128 << (self.bits() - 1))
        } else {
            0
        }
    }

    pub(crate) const fn max(self) -> i128 {
        if self.signed() {
            (1i128 << (self.bits() - 1)) - 1
        } else {
            (1i128 << self.bits()) - 1
        }
    }

    /// The type as an identifier, for generated code.
    pub(crate) fn ident(self) -> Ident {
        Ident::new(self.name(), Span::call_site())
    }

    /// The next wider type of the same signedness, for "widen the field" hints.
    pub(crate) const fn wider(self) -> Option<IntTy> {
        match self {
            IntTy::U8 => Some(IntTy::U16),
            IntTy::U16 => Some(IntTy::U32),
            IntTy::U32 => Some(IntTy::U64),
            IntTy::I8 => Some(IntTy::I16),
            IntTy::I16 => Some(IntTy::I32),
            IntTy::I32 => Some(IntTy::I64),
            IntTy::U64 | IntTy::I64 => None,
        }
    }

    /// The signed type of the same width, for "negative bound" hints.
    pub(crate) const fn as_signed(self) -> IntTy {
        match self {
            IntTy::U8 | IntTy::I8 => IntTy::I8,
            IntTy::U16 | IntTy::I16 => IntTy::I16,
            IntTy::U32 | IntTy::I32 => IntTy::I32,
            IntTy::U64 | IntTy::I64 => IntTy::I64,
        }
    }
}

/// What a field's type is, as far as its name tells.
#[derive(Clone, Copy)]
pub(crate) enum Shape<'a> {
    Int(IntTy),
    Bool,
    F32,
    F64,
    /// `usize` / `isize`: no fixed width on the wire.
    Size(&'static str),
    String,
    /// `Vec<T>`, with `T`.
    Vec(&'a Type),
    /// Anything else: it must implement `NetMessage`.
    Other,
}

impl Shape<'_> {
    /// How the type is named in messages.
    pub(crate) fn describe(&self, ty: &Type) -> String {
        match self {
            Shape::Int(t) => t.name().to_owned(),
            Shape::Bool => "bool".to_owned(),
            Shape::F32 => "f32".to_owned(),
            Shape::F64 => "f64".to_owned(),
            Shape::Size(name) => (*name).to_owned(),
            Shape::String => "String".to_owned(),
            Shape::Vec(_) | Shape::Other => quote::ToTokens::to_token_stream(ty)
                .to_string()
                .replace(" < ", "<")
                .replace(" >", ">"),
        }
    }
}

/// Classifies `ty` by its name: `u8`, `core::primitive::u8`, `String`, `Vec<T>`, ...
pub(crate) fn shape(ty: &Type) -> Shape<'_> {
    let ty = strip_type(ty);
    let Type::Path(path) = ty else {
        return Shape::Other;
    };
    if path.qself.is_some() {
        return Shape::Other;
    }
    let segments: Vec<_> = path.path.segments.iter().collect();
    let Some(last) = segments.last() else {
        return Shape::Other;
    };
    let prefix: Vec<String> = segments[..segments.len() - 1]
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let name = last.ident.to_string();
    let primitive_prefix = prefix.is_empty() || matches!(prefix[..], ["core" | "std", "primitive"]);
    if primitive_prefix && last.arguments.is_none() {
        if let Some(int) = IntTy::from_name(&name) {
            return Shape::Int(int);
        }
        match name.as_str() {
            "bool" => return Shape::Bool,
            "f32" => return Shape::F32,
            "f64" => return Shape::F64,
            "usize" => return Shape::Size("usize"),
            "isize" => return Shape::Size("isize"),
            _ => {}
        }
    }
    let std_prefix = |module: &str| {
        prefix.is_empty()
            || matches!(prefix[..], [root, m] if (root == "std" || root == "alloc") && m == module)
    };
    if name == "String" && last.arguments.is_none() && std_prefix("string") {
        return Shape::String;
    }
    if name == "Vec"
        && std_prefix("vec")
        && let PathArguments::AngleBracketed(args) = &last.arguments
    {
        let types: Vec<&Type> = args
            .args
            .iter()
            .filter_map(|a| match a {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect();
        if let [elem] = types[..] {
            return Shape::Vec(elem);
        }
    }
    Shape::Other
}

/// A `String` or `Vec` inside an `Option`, an array or a tuple (the composite types the
/// runtime implements `NetMessage` for), where no `max_len` can reach it. Other generic
/// types are left alone: a user's own wrapper may bound its contents itself.
pub(crate) fn nested_unbounded(ty: &Type) -> Option<&Type> {
    match strip_type(ty) {
        Type::Array(a) => unbounded_here_or_below(&a.elem),
        Type::Tuple(t) => t.elems.iter().find_map(unbounded_here_or_below),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let std_option = p.path.segments.len() == 1
                || p.path
                    .segments
                    .iter()
                    .next()
                    .is_some_and(|s| s.ident == "core" || s.ident == "std");
            if last.ident != "Option" || !std_option {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                    GenericArgument::Type(t) => unbounded_here_or_below(t),
                    _ => None,
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

fn unbounded_here_or_below(ty: &Type) -> Option<&Type> {
    match shape(ty) {
        Shape::String | Shape::Vec(_) => Some(ty),
        _ => nested_unbounded(ty),
    }
}

pub(crate) fn strip_type(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(g) => ty = &g.elem,
            Type::Paren(p) => ty = &p.elem,
            _ => return ty,
        }
    }
}

fn strip_expr(mut expr: &Expr) -> &Expr {
    loop {
        match expr {
            Expr::Group(g) => expr = &g.expr,
            Expr::Paren(p) => expr = &p.expr,
            _ => return expr,
        }
    }
}

/// An integer literal the macro evaluated, with its type suffix if it had one.
#[derive(Clone, Debug)]
pub(crate) struct IntLit {
    pub(crate) value: i128,
    pub(crate) suffix: String,
}

/// The value of an integer literal, `-literal`, or `T::MIN` / `T::MAX` of a primitive
/// integer; `Ok(None)` for any other expression (a constant the compiler evaluates).
pub(crate) fn int(expr: &Expr) -> syn::Result<Option<IntLit>> {
    match strip_expr(expr) {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Int(int) => {
                let value = int.base10_parse::<i128>().map_err(|_| {
                    syn::Error::new(int.span(), "integer too large: bounds must fit in i128")
                })?;
                Ok(Some(IntLit {
                    value,
                    suffix: int.suffix().to_owned(),
                }))
            }
            Lit::Float(_) => Err(syn::Error::new(
                lit.span(),
                "expected an integer, found a float: integer fields take integer bounds (for fractions \
                 use an f32 field with quantize)",
            )),
            other => Err(syn::Error::new(
                other.span(),
                "expected an integer or a constant",
            )),
        },
        Expr::Unary(unary) if matches!(unary.op, UnOp::Neg(_)) => {
            Ok(int(&unary.expr)?.map(|lit| IntLit {
                value: -lit.value,
                suffix: lit.suffix,
            }))
        }
        Expr::Path(path) if path.qself.is_none() && path.path.segments.len() == 2 => {
            let ty = &path.path.segments[0];
            let item = &path.path.segments[1];
            let Some(int_ty) = IntTy::from_name(&ty.ident.to_string()) else {
                return Ok(None);
            };
            if !ty.arguments.is_none() || !item.arguments.is_none() {
                return Ok(None);
            }
            let value = match item.ident.to_string().as_str() {
                "MIN" => int_ty.min(),
                "MAX" => int_ty.max(),
                _ => return Ok(None),
            };
            Ok(Some(IntLit {
                value,
                suffix: String::new(),
            }))
        }
        _ => Ok(None),
    }
}

/// The `f32` value of a float or integer literal or its negation, exactly as the compiler
/// would round it; `Ok(None)` for any other expression.
pub(crate) fn float(expr: &Expr) -> syn::Result<Option<f32>> {
    match strip_expr(expr) {
        Expr::Lit(lit) => {
            let (digits, suffix) = match &lit.lit {
                Lit::Float(f) => (f.base10_digits().to_owned(), f.suffix().to_owned()),
                Lit::Int(i) => (i.base10_digits().to_owned(), i.suffix().to_owned()),
                other => return Err(syn::Error::new(other.span(), "expected a number")),
            };
            if !suffix.is_empty() && suffix != "f32" {
                return Err(syn::Error::new(
                    lit.span(),
                    format_args!("quantize parameters are f32: drop the `{suffix}` suffix"),
                ));
            }
            digits
                .parse::<f32>()
                .map(Some)
                .map_err(|_| syn::Error::new(lit.span(), "expected a number"))
        }
        Expr::Unary(unary) if matches!(unary.op, UnOp::Neg(_)) => {
            Ok(float(&unary.expr)?.map(|v| -v))
        }
        _ => Ok(None),
    }
}

/// The span of a `Self` in `expr`: bounds are evaluated outside the impl, where `Self`
/// means nothing.
pub(crate) fn mentions_self(expr: &Expr) -> Option<Span> {
    fn scan(tokens: proc_macro2::TokenStream) -> Option<Span> {
        tokens.into_iter().find_map(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) if i == "Self" => Some(i.span()),
            proc_macro2::TokenTree::Group(g) => scan(g.stream()),
            _ => None,
        })
    }
    scan(quote::ToTokens::to_token_stream(expr))
}

/// A short rendering of an expression for messages.
pub(crate) fn render(expr: &Expr) -> String {
    let text = quote::ToTokens::to_token_stream(expr).to_string();
    text.replace(" :: ", "::")
        .replace("- ", "-")
        .replace(" . ", ".")
        .replace("( ", "(")
        .replace(" )", ")")
}

/// An `f32` the macro knows, as a constant expression of its exact bits
/// (`f32::from_bits(0x4049_0ff9)`). A literal would do, but a declared bound that happens
/// to be close to a constant (`3.1416`) is then flagged by clippy's `approx_constant` in
/// the user's crate, where it is no approximation of anything.
pub(crate) fn f32_expr(value: f32) -> proc_macro2::TokenStream {
    let bits = proc_macro2::Literal::u32_suffixed(value.to_bits());
    quote::quote!(f32::from_bits(#bits))
}
