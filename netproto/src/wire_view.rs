//! A stable, human-readable rendering of a message's wire form, for snapshot tests.

use core::fmt;

use bitvec::order::Lsb0;
use bitvec::view::BitView;

use crate::error::{ErrorKind, StreamError};
use crate::stream::{NetMessage, Place, Stream, WriteStream};

/// One primitive on the wire (a value, a byte run or alignment padding) and the field
/// that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireField {
    /// Dotted path of the field (`"pos.x"`; `"state"` for the variant index of an enum
    /// field); empty for bits written outside any field (a top-level enum's variant
    /// index, shown as `(variant)`).
    pub path: String,
    /// First bit, counted from the start of the message.
    pub offset: usize,
    /// Width in bits.
    pub width: usize,
    /// Whether these bits are alignment padding rather than data.
    pub padding: bool,
    /// What the bits mean when that is not the integer they carry (a delta code's
    /// difference, `+3`; a gap-coded id, `id 40`), shown in brackets after the value;
    /// `None` for every other field.
    pub note: Option<String>,
}

/// A message encoded and annotated bit by bit: bytes in hex, then one row per field with
/// its bit offset, width, the bits themselves (in wire order, first bit first) and the
/// integer they carry (for a delta's codes, also what they mean, in brackets: the
/// difference a delta code carries, the id a gap-coded id names). Its
/// [`Display`](fmt::Display) form is stable and meant for snapshot tests of your own
/// protocol (for example with `insta::assert_snapshot!`): a changed wire format changes
/// the text.
///
/// ```
/// use netproto::NetMessage;
///
/// #[derive(NetMessage)]
/// struct Hit {
///     #[net(range = 0..=100)]
///     damage: u8,
///     critical: bool,
/// }
///
/// let view = netproto::WireView::of(&mut Hit { damage: 42, critical: true }).unwrap();
/// assert_eq!(
///     view.to_string(),
///     "Hit: 8 bits, 1 byte: aa\n\
///      \x20 bit  width  field     bits     value\n\
///      \x20   0      7  damage    0101010  42\n\
///      \x20   7      1  critical  1        1\n"
/// );
/// ```
#[derive(Clone, Debug)]
pub struct WireView {
    name: &'static str,
    bytes: Vec<u8>,
    bits: usize,
    fields: Vec<WireField>,
}

impl WireView {
    /// Encodes `message` and records which field wrote which bits.
    pub fn of<T: NetMessage>(message: &mut T) -> Result<Self, StreamError> {
        Self::traced(T::MAX_BITS, |tracer| message.serialize(tracer))
            .map(|view| view.named(core::any::type_name::<T>()))
    }

    /// Runs `op` on a tracing writer with room for `max_bits`.
    pub(crate) fn traced(
        max_bits: usize,
        op: impl FnOnce(&mut Tracer<'_>) -> Result<(), StreamError>,
    ) -> Result<Self, StreamError> {
        let mut bytes = vec![0u8; max_bits.div_ceil(8)];
        let mut tracer = Tracer {
            inner: WriteStream::new(&mut bytes),
            path: Vec::new(),
            fields: Vec::new(),
        };
        op(&mut tracer)?;
        let Tracer { inner, fields, .. } = tracer;
        let bits = inner.bits_processed();
        let len = inner.finish();
        bytes.truncate(len);
        Ok(Self {
            name: "message",
            bytes,
            bits,
            fields,
        })
    }

    /// The view, titled with the last segment of `type_name` (generics dropped).
    pub(crate) fn named(mut self, type_name: &'static str) -> Self {
        let bare = type_name.split('<').next().unwrap_or(type_name);
        self.name = bare.rsplit("::").next().unwrap_or("message");
        self
    }

    /// The encoded bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bits written.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// The rows, in wire order.
    pub fn fields(&self) -> &[WireField] {
        &self.fields
    }

    fn row_bits(&self, field: &WireField) -> String {
        let view = self.bytes.view_bits::<Lsb0>();
        match view.get(field.offset..field.offset + field.width) {
            Some(bits) => bits.iter().map(|b| if *b { '1' } else { '0' }).collect(),
            None => String::new(),
        }
    }

    fn row_value(&self, field: &WireField) -> String {
        let view = self.bytes.view_bits::<Lsb0>();
        let Some(bits) = view.get(field.offset..field.offset + field.width) else {
            return String::new();
        };
        if field.width <= 64 {
            let value = bits
                .iter()
                .rev()
                .fold(0u64, |acc, b| acc << 1 | u64::from(*b));
            value.to_string()
        } else if field.offset.is_multiple_of(8) && field.width.is_multiple_of(8) {
            let start = field.offset / 8;
            hex(&self.bytes[start..start + field.width / 8])
        } else {
            format!("({} bits)", field.width)
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

impl fmt::Display for WireView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.bytes.len() == 1 { "" } else { "s" };
        writeln!(
            f,
            "{}: {} bits, {} byte{plural}: {}",
            self.name,
            self.bits,
            self.bytes.len(),
            hex(&self.bytes)
        )?;
        let rows: Vec<[String; 5]> = self
            .fields
            .iter()
            .map(|field| {
                let label = match (field.padding, field.path.is_empty()) {
                    (true, true) => "(pad)".to_owned(),
                    (true, false) => format!("{} (pad)", field.path),
                    (false, true) => "(variant)".to_owned(),
                    (false, false) => field.path.clone(),
                };
                let bits = self.row_bits(field);
                let bits = if bits.len() > 64 {
                    format!("{}…", &bits[..64])
                } else {
                    bits
                };
                [
                    field.offset.to_string(),
                    field.width.to_string(),
                    label,
                    bits,
                    match (field.padding, &field.note) {
                        (true, _) => String::new(),
                        (false, None) => self.row_value(field),
                        (false, Some(note)) => format!("{} ({note})", self.row_value(field)),
                    },
                ]
            })
            .collect();
        use crate::text_table::{Align, write};
        let align = [
            Align::Right,
            Align::Right,
            Align::Left,
            Align::Left,
            Align::Left,
        ];
        write(f, ["bit", "width", "field", "bits", "value"], align, &rows)
    }
}

/// A write stream that records, per primitive, which field path wrote it.
pub(crate) struct Tracer<'a> {
    inner: WriteStream<'a>,
    path: Vec<&'static str>,
    fields: Vec<WireField>,
}

impl Tracer<'_> {
    fn record(&mut self, start: usize, padding: bool) {
        let end = self.inner.bits_processed();
        if end == start {
            return;
        }
        let path = self.path.join(".");
        self.fields.push(WireField {
            path,
            offset: start,
            width: end - start,
            padding,
            note: None,
        });
    }

    /// Runs an aligning primitive: records its padding and its data separately.
    fn aligned(
        &mut self,
        op: impl FnOnce(&mut WriteStream<'_>) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        let start = self.inner.bits_processed();
        self.inner.serialize_align()?;
        self.record(start, true);
        let start = self.inner.bits_processed();
        op(&mut self.inner)?;
        self.record(start, false);
        Ok(())
    }
}

impl Stream for Tracer<'_> {
    type Error = StreamError;
    const IS_WRITING: bool = true;
    const IS_READING: bool = false;
    const TRACING: bool = true;

    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), StreamError> {
        let start = self.inner.bits_processed();
        self.inner.serialize_bits(value, bits)?;
        self.record(start, false);
        Ok(())
    }

    fn serialize_align(&mut self) -> Result<(), StreamError> {
        let start = self.inner.bits_processed();
        self.inner.serialize_align()?;
        self.record(start, true);
        Ok(())
    }

    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), StreamError> {
        self.aligned(|w| w.serialize_bytes(bytes))
    }

    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), StreamError> {
        self.inner.check(ok, kind)
    }

    fn in_field(err: StreamError, field: &'static str) -> StreamError {
        err.in_field(field)
    }

    fn bits_processed(&self) -> usize {
        self.inner.bits_processed()
    }

    fn bits_remaining(&self) -> usize {
        self.inner.bits_remaining()
    }

    fn begin_field(&mut self, name: &'static str) {
        self.path.push(name);
    }

    fn end_field(&mut self) {
        self.path.pop();
    }

    fn annotate(&mut self, meaning: fmt::Arguments<'_>) {
        // The field's last primitive: a delta code or an id is written last in its field.
        if let Some(last) = self.fields.last_mut() {
            last.note = Some(meaning.to_string());
        }
    }
}
