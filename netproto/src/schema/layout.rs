//! Printable wire layouts: a table of every field's bit offsets, width, kind and bounds,
//! and an RFC-style bit diagram of the fixed-size prefix.

use core::fmt;

use super::{Field, Kind, Schema, Variant};
use crate::message_set::MessageSet;
use crate::stream::NetMessage;

/// Where a row's bits are, counted in bits from the start of the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Offset {
    /// At this bit in every message (the fields before it have a fixed size).
    At(usize),
    /// At this bit counted from the start of the enclosing repeated element (an array
    /// or sequence element), shown as `+N`.
    InElement(usize),
    /// Depends on the values before it (after a string, sequence, option or enum whose
    /// size varies).
    Variable,
}

/// One row of a [`Layout`]: a value on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayoutRow {
    /// Dotted path of the field: `position.x`, `state.Moving.speed` (a field of enum
    /// variant `Moving`), `winner.Some` (the value of an option), `ids[i]` (each element
    /// of a sequence or array), `text.len` (a length); `(variant)` for the index of a
    /// top-level enum, `(type id)` in a message set.
    pub path: String,
    /// Where the value starts.
    pub offset: Offset,
    /// The fewest bits it takes.
    pub min_bits: usize,
    /// The most bits it takes.
    pub max_bits: usize,
    /// What it is: `int u8`, `bits u8`, `quantized f32`, `bool`, `f32`, `f64`, `length`,
    /// `string`, `option`, `array`, `enum Name`, `opaque Name`.
    pub kind: String,
    /// Its declared bounds, as written in the attributes (`0..=100`, `-1.0..=1.0 res 0.01`).
    pub bounds: String,
    /// Whether it is sent only in some messages (inside an enum variant or an option).
    pub conditional: bool,
}

/// The wire layout of a type, from its [`Schema`]: one row per value on the wire, in wire
/// order, with its bit offsets (`start..end`, or `variable` once a variable-size value
/// came before), width, kind and declared bounds; the header gives the total bits.
///
/// Nested structs and tuples are flattened into dotted paths; an enum gets a row for its
/// variant index, then the rows of each variant (`field.Variant.inner`), which all start
/// where the index ends. A repeated element (`ids[i]`) is laid out once, with offsets
/// relative to the element (`+0..12`).
///
/// [`Layout::diagram`] draws the fixed-size prefix as an RFC-style bit diagram.
///
/// ```
/// use netproto::NetMessage;
/// use netproto::schema::Layout;
///
/// #[derive(NetMessage)]
/// struct Hit {
///     #[net(range = 0..=100)]
///     damage: u8,
///     critical: bool,
///     #[net(max_len = 16)]
///     note: String,
/// }
///
/// assert_eq!(
///     Layout::of::<Hit>().to_string(),
///     "Hit: 13..=148 bits\n\
///      \x20 bits     width  field     kind    bounds\n\
///      \x20 0..7         7  damage    int u8  0..=100\n\
///      \x20 7..8         1  critical  bool\n\
///      \x20 8..13        5  note.len  length  0..=16\n\
///      \x20 13..   0..=135  note      string  align, then 0..=16 bytes of UTF-8\n"
/// );
/// ```
#[derive(Clone, Debug)]
pub struct Layout {
    name: &'static str,
    min_bits: usize,
    max_bits: usize,
    rows: Vec<LayoutRow>,
}

/// Walks a schema into rows.
struct Walker {
    rows: Vec<LayoutRow>,
}

/// Where the next value starts.
#[derive(Clone, Copy)]
enum Cursor {
    At(usize),
    InElement(usize),
    Variable,
}

impl Cursor {
    fn offset(self) -> Offset {
        match self {
            Cursor::At(n) => Offset::At(n),
            Cursor::InElement(n) => Offset::InElement(n),
            Cursor::Variable => Offset::Variable,
        }
    }

    /// The cursor after a value of `schema`'s size.
    fn after(self, schema: &Schema) -> Cursor {
        self.advance(schema.min_bits, schema.max_bits)
    }

    fn advance(self, min: usize, max: usize) -> Cursor {
        if min != max {
            return Cursor::Variable;
        }
        match self {
            Cursor::At(n) => Cursor::At(n + min),
            Cursor::InElement(n) => Cursor::InElement(n + min),
            Cursor::Variable => Cursor::Variable,
        }
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn float(v: f32) -> String {
    format!("{v:?}")
}

/// A type's name as a reader would write it: `Option<u8>`, `[f32; 3]`, `Vec<EntityId>`.
fn type_name(schema: &Schema) -> String {
    match schema.kind {
        Kind::Option(inner) => format!("Option<{}>", type_name(inner)),
        Kind::Array { len, element } => format!("[{}; {len}]", type_name(element)),
        Kind::Sequence { element, .. } => format!("Vec<{}>", type_name(element)),
        Kind::Tuple(elements) => {
            let names: Vec<String> = elements.iter().map(|e| type_name(e)).collect();
            if names.len() == 1 {
                format!("({},)", names[0])
            } else {
                format!("({})", names.join(", "))
            }
        }
        _ => schema.name.to_owned(),
    }
}

impl Walker {
    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        path: &str,
        cursor: Cursor,
        min_bits: usize,
        max_bits: usize,
        kind: String,
        bounds: String,
        conditional: bool,
    ) {
        let path = if path.is_empty() {
            "(value)".to_owned()
        } else {
            path.to_owned()
        };
        self.rows.push(LayoutRow {
            path,
            offset: cursor.offset(),
            min_bits,
            max_bits,
            kind,
            bounds,
            conditional,
        });
    }

    /// Rows for `schema` at `cursor`; returns the cursor after it.
    fn walk(&mut self, schema: &Schema, path: &str, cursor: Cursor, cond: bool) -> Cursor {
        let fixed = |this: &mut Walker, kind: String, bounds: String| {
            this.row(
                path,
                cursor,
                schema.min_bits,
                schema.max_bits,
                kind,
                bounds,
                cond,
            );
            cursor.after(schema)
        };
        match schema.kind {
            Kind::Bool => fixed(self, "bool".into(), String::new()),
            Kind::Int { ty, min, max } => {
                fixed(self, format!("int {}", ty.name()), format!("{min}..={max}"))
            }
            Kind::Bits { ty, bits } => fixed(
                self,
                format!("bits {}", ty.name()),
                format!(
                    "0..={}",
                    1u128.checked_shl(bits).map_or(u128::MAX, |v| v - 1)
                ),
            ),
            Kind::F32 => fixed(self, "f32".into(), "raw IEEE 754".into()),
            Kind::F64 => fixed(self, "f64".into(), "raw IEEE 754".into()),
            Kind::Quantized { min, max, res, .. } => fixed(
                self,
                "quantized f32".into(),
                format!("{}..={} res {}", float(min), float(max), float(res)),
            ),
            Kind::Opaque => fixed(self, format!("opaque {}", schema.name), String::new()),
            Kind::String { max_len } => {
                let len_bits = crate::bits_required(0, u64::from(max_len)) as usize;
                let len_path = join(path, "len");
                self.row(
                    &len_path,
                    cursor,
                    len_bits,
                    len_bits,
                    "length".into(),
                    format!("0..={max_len}"),
                    cond,
                );
                let cursor = cursor.advance(len_bits, len_bits);
                self.row(
                    path,
                    cursor,
                    0,
                    schema.max_bits - len_bits,
                    "string".into(),
                    format!("align, then 0..={max_len} bytes of UTF-8"),
                    cond,
                );
                Cursor::Variable
            }
            Kind::Sequence { max_len, element } => {
                let len_bits = crate::bits_required(0, u64::from(max_len)) as usize;
                self.row(
                    &join(path, "len"),
                    cursor,
                    len_bits,
                    len_bits,
                    "length".into(),
                    format!("0..={max_len} × {}", type_name(element)),
                    cond,
                );
                if max_len > 0 {
                    self.walk(element, &format!("{path}[i]"), Cursor::InElement(0), cond);
                }
                cursor.after(schema)
            }
            Kind::Array { len, element } => {
                if element.is_fixed_size() && is_leaf(element) {
                    let inner = Walker::leaf_row(element);
                    fixed(
                        self,
                        format!("array {}", type_name(schema)),
                        format!("{len} × {}", inner.bounds).trim_end().to_owned(),
                    )
                } else {
                    fixed(
                        self,
                        format!("array {}", type_name(schema)),
                        format!("{len} × {}", type_name(element)),
                    );
                    if len > 0 {
                        self.walk(element, &format!("{path}[i]"), Cursor::InElement(0), cond);
                    }
                    cursor.after(schema)
                }
            }
            Kind::Option(inner) => {
                self.row(path, cursor, 1, 1, "option".into(), "1 = Some".into(), cond);
                self.walk(inner, &join(path, "Some"), cursor.advance(1, 1), true);
                cursor.after(schema)
            }
            Kind::Tuple(elements) => {
                let mut at = cursor;
                for (i, element) in elements.iter().enumerate() {
                    at = self.walk(element, &join(path, &i.to_string()), at, cond);
                }
                cursor.after(schema)
            }
            Kind::Struct(fields) => {
                self.fields(fields, path, cursor, cond);
                cursor.after(schema)
            }
            Kind::Enum(variants) => {
                self.enumeration(schema, variants, path, cursor, cond, "(variant)");
                cursor.after(schema)
            }
        }
    }

    fn fields(&mut self, fields: &[Field], path: &str, cursor: Cursor, cond: bool) -> Cursor {
        let mut at = cursor;
        for field in fields {
            at = self.walk(field.schema, &join(path, field.name), at, cond);
        }
        at
    }

    fn enumeration(
        &mut self,
        schema: &Schema,
        variants: &[Variant],
        path: &str,
        cursor: Cursor,
        cond: bool,
        top_label: &str,
    ) {
        let tag = crate::bits_for_count(variants.len() as u64) as usize;
        let last = variants.len().saturating_sub(1);
        let bounds = if variants.len() <= 8 {
            let names: Vec<String> = variants
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{i} {}", v.name))
                .collect();
            names.join(", ")
        } else {
            format!("0..={last}")
        };
        let tag_path = if path.is_empty() { top_label } else { path };
        self.rows.push(LayoutRow {
            path: tag_path.to_owned(),
            offset: cursor.offset(),
            min_bits: tag,
            max_bits: tag,
            kind: format!("enum {}", schema.name),
            bounds,
            conditional: cond,
        });
        let start = cursor.advance(tag, tag);
        for variant in variants {
            self.fields(variant.fields, &join(path, variant.name), start, true);
        }
    }

    /// The row of a fixed-size leaf, for array summaries.
    fn leaf_row(schema: &Schema) -> LayoutRow {
        let mut walker = Walker { rows: Vec::new() };
        walker.walk(schema, "", Cursor::At(0), false);
        walker.rows.swap_remove(0)
    }
}

/// A kind that makes exactly one row.
fn is_leaf(schema: &Schema) -> bool {
    matches!(
        schema.kind,
        Kind::Bool
            | Kind::Int { .. }
            | Kind::Bits { .. }
            | Kind::F32
            | Kind::F64
            | Kind::Quantized { .. }
            | Kind::Opaque
    )
}

fn bits_range(min: usize, max: usize) -> String {
    if min == max {
        format!("{min}")
    } else {
        format!("{min}..={max}")
    }
}

impl Layout {
    /// The layout of `T`.
    pub fn of<T: NetMessage>() -> Self {
        Self::new(T::SCHEMA)
    }

    /// The layout of a schema.
    pub fn new(schema: &Schema) -> Self {
        Self::starting_at(schema, 0)
    }

    /// The layout of a schema whose first bit is at `start` (a payload after a type id).
    fn starting_at(schema: &Schema, start: usize) -> Self {
        let mut walker = Walker { rows: Vec::new() };
        walker.walk(schema, "", Cursor::At(start), false);
        Layout {
            name: schema.name,
            min_bits: schema.min_bits,
            max_bits: schema.max_bits,
            rows: walker.rows,
        }
    }

    /// The rows, in wire order.
    pub fn rows(&self) -> &[LayoutRow] {
        &self.rows
    }

    /// The fewest bits a message takes (an align counted as 0 bits).
    pub fn min_bits(&self) -> usize {
        self.min_bits
    }

    /// The most bits a message takes (an align counted as 7 bits).
    pub fn max_bits(&self) -> usize {
        self.max_bits
    }

    /// The fixed-size prefix (every row at a known offset, sent in every message) as an
    /// RFC-style bit diagram, 32 bits a line, bit 0 first (the first bit on the wire,
    /// the least significant bit of the first byte).
    ///
    /// ```
    /// use netproto::NetMessage;
    /// use netproto::schema::Layout;
    ///
    /// #[derive(NetMessage)]
    /// struct Hit {
    ///     #[net(range = 0..=100)]
    ///     damage: u8,
    ///     critical: bool,
    /// }
    ///
    /// assert_eq!(
    ///     Layout::of::<Hit>().diagram().to_string(),
    ///     " 0                   1                   2                   3\n\
    ///      \x200 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1\n\
    ///      +-+-+-+-+-+-+-+-+\n\
    ///      |   damage    |c|\n\
    ///      +-+-+-+-+-+-+-+-+\n"
    /// );
    /// ```
    pub fn diagram(&self) -> Diagram<'_> {
        Diagram { layout: self }
    }

    /// The rows of the fixed-size prefix: `(path, start, width)`.
    fn prefix(&self) -> (Vec<(&str, usize, usize)>, bool) {
        let mut out = Vec::new();
        let mut end = None;
        for row in &self.rows {
            let Offset::At(start) = row.offset else {
                return (out, true);
            };
            if row.conditional || row.min_bits != row.max_bits || end.is_some_and(|e| e != start) {
                return (out, true);
            }
            end = Some(start + row.max_bits);
            if row.max_bits > 0 {
                out.push((row.path.as_str(), start, row.max_bits));
            }
        }
        (out, false)
    }

    fn write_rows(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rows.is_empty() {
            return writeln!(f, "  (nothing on the wire)");
        }
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|row| {
                let bits = match row.offset {
                    Offset::At(s) if row.min_bits == row.max_bits => {
                        format!("{s}..{}", s + row.max_bits)
                    }
                    Offset::At(s) => format!("{s}.."),
                    Offset::InElement(s) if row.min_bits == row.max_bits => {
                        format!("+{s}..{}", s + row.max_bits)
                    }
                    Offset::InElement(s) => format!("+{s}.."),
                    Offset::Variable => "variable".to_owned(),
                };
                [
                    bits,
                    bits_range(row.min_bits, row.max_bits),
                    row.path.clone(),
                    row.kind.clone(),
                    row.bounds.clone(),
                ]
            })
            .collect();
        use crate::text_table::{Align, write};
        let align = [
            Align::Left,
            Align::Right,
            Align::Left,
            Align::Left,
            Align::Left,
        ];
        write(
            f,
            ["bits", "width", "field", "kind", "bounds"],
            align,
            &cells,
        )
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} bits",
            self.name,
            bits_range(self.min_bits, self.max_bits)
        )?;
        self.write_rows(f)
    }
}

/// The RFC-style bit diagram of a [`Layout`]'s fixed-size prefix; see [`Layout::diagram`].
#[derive(Clone, Copy, Debug)]
pub struct Diagram<'a> {
    layout: &'a Layout,
}

const LINE_BITS: usize = 32;

impl fmt::Display for Diagram<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rows, more) = self.layout.prefix();
        let Some(&(_, first, _)) = rows.first() else {
            return writeln!(f, "(no fixed-size prefix)");
        };
        let end = rows.last().map_or(first, |&(_, s, w)| s + w);
        writeln!(
            f,
            " 0                   1                   2                   3"
        )?;
        writeln!(
            f,
            " 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1"
        )?;
        let border = |bits: usize| {
            let mut s = "+-".repeat(bits);
            s.push('+');
            s
        };
        // Lines cover [line * 32, line * 32 + 32); the first may start inside (after a
        // type id, for example): pad it.
        let first_line = first / LINE_BITS;
        let last_line = (end - 1) / LINE_BITS;
        writeln!(
            f,
            "{}{}",
            "  ".repeat(first % LINE_BITS),
            border(((first_line + 1) * LINE_BITS).min(end) - first)
        )?;
        for line in first_line..=last_line {
            let (lo, hi) = (line * LINE_BITS, (line + 1) * LINE_BITS);
            let mut text = String::new();
            if line == first_line {
                text.push_str(&"  ".repeat(first - lo));
            }
            for &(path, start, width) in &rows {
                let (s, e) = (start.max(lo), (start + width).min(hi));
                if s >= e {
                    continue;
                }
                let room = 2 * (e - s) - 1;
                let label: String = path
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .chars()
                    .take(room)
                    .collect();
                let n = label.chars().count();
                let left = (room - n) / 2;
                text.push('|');
                text.push_str(&" ".repeat(left));
                text.push_str(&label);
                text.push_str(&" ".repeat(room - n - left));
            }
            text.push('|');
            writeln!(f, "{text}")?;
            let line_end = hi.min(end);
            let line_start = if line == first_line { first } else { lo };
            writeln!(
                f,
                "{}{}",
                "  ".repeat(line_start - lo),
                border(line_end - line_start)
            )?;
            let _ = line_end;
        }
        if more {
            writeln!(f, "(then from bit {end}: see the table)")?;
        }
        Ok(())
    }
}

/// The layout of a [message set](MessageSet): a header with the number of types, the
/// type id's width, the total bits and the fingerprint; a table of the types (id,
/// variant, payload type, payload bits); then each payload's [`Layout`], with offsets
/// counted from the start of the message (after the type id).
///
/// ```
/// use netproto::NetMessage;
/// use netproto::schema::SetLayout;
///
/// #[derive(NetMessage)]
/// struct Ping;
///
/// #[derive(NetMessage)]
/// struct Hit {
///     #[net(range = 0..=100)]
///     damage: u8,
/// }
///
/// #[derive(NetMessage)]
/// #[net(message_set)]
/// enum Msg {
///     Ping(Ping),
///     Hit(Hit),
/// }
///
/// let text = SetLayout::of::<Msg>().to_string();
/// assert!(text.starts_with("Msg: message set of 2 types, type id in 1 bit, 1..=8 bits"));
/// ```
#[derive(Clone, Debug)]
pub struct SetLayout {
    name: &'static str,
    count: u32,
    type_bits: u32,
    min_bits: usize,
    max_bits: usize,
    fingerprint: u64,
    types: Vec<(&'static str, Layout)>,
}

impl SetLayout {
    /// The layout of message set `M`.
    pub fn of<M: MessageSet>() -> Self {
        let schema = M::SCHEMA;
        let start = M::TYPE_BITS as usize;
        let types = schema
            .variants()
            .iter()
            .map(|variant| {
                let layout = match variant.fields {
                    [payload] => Layout::starting_at(payload.schema, start),
                    fields => {
                        let mut walker = Walker { rows: Vec::new() };
                        walker.fields(fields, "", Cursor::At(start), false);
                        let (lo, hi) = super::fields_bits(fields);
                        Layout {
                            name: variant.name,
                            min_bits: lo,
                            max_bits: hi,
                            rows: walker.rows,
                        }
                    }
                };
                (variant.name, layout)
            })
            .collect();
        SetLayout {
            name: schema.name,
            count: M::COUNT,
            type_bits: M::TYPE_BITS,
            min_bits: schema.min_bits,
            max_bits: schema.max_bits,
            fingerprint: M::FINGERPRINT,
            types,
        }
    }

    /// Each type's variant name and payload layout, by type id.
    pub fn types(&self) -> impl ExactSizeIterator<Item = (&'static str, &Layout)> + '_ {
        self.types.iter().map(|(name, layout)| (*name, layout))
    }
}

impl fmt::Display for SetLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: u64, what: &str| {
            if n == 1 {
                format!("{n} {what}")
            } else {
                format!("{n} {what}s")
            }
        };
        writeln!(
            f,
            "{}: message set of {}, type id in {}, {} bits, fingerprint {:#018x}",
            self.name,
            plural(u64::from(self.count), "type"),
            plural(u64::from(self.type_bits), "bit"),
            bits_range(self.min_bits, self.max_bits),
            self.fingerprint
        )?;
        let id_w = (self.count.saturating_sub(1)).to_string().len().max(2);
        let var_w = self
            .types
            .iter()
            .map(|(n, _)| n.len())
            .max()
            .unwrap_or(0)
            .max("variant".len());
        let ty_w = self
            .types
            .iter()
            .map(|(_, l)| l.name.len())
            .max()
            .unwrap_or(0)
            .max("payload".len());
        writeln!(
            f,
            "  {:>id_w$}  {:<var_w$}  {:<ty_w$}  bits",
            "id", "variant", "payload"
        )?;
        for (id, (name, layout)) in self.types.iter().enumerate() {
            writeln!(
                f,
                "  {id:>id_w$}  {name:<var_w$}  {:<ty_w$}  {}",
                layout.name,
                bits_range(layout.min_bits, layout.max_bits)
            )?;
        }
        for (id, (name, layout)) in self.types.iter().enumerate() {
            writeln!(f)?;
            writeln!(
                f,
                "type {id} {name}: {}, {} bits after the type id",
                layout.name,
                bits_range(layout.min_bits, layout.max_bits)
            )?;
            layout.write_rows(f)?;
        }
        Ok(())
    }
}
