//! Bounds-checked little-endian cursors over byte slices: every read and write either
//! fits or reports it, never panics.

/// Reads little-endian fields from the front of a slice.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.bytes.split_at_checked(n)?;
        self.bytes = tail;
        Some(head)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.array().map(i32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
}

/// Writes fields at the front of a slice, advancing.
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    bytes: &'a mut [u8],
    pos: usize,
}

/// The output is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

impl<'a> Writer<'a> {
    pub(crate) fn new(bytes: &'a mut [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn put(&mut self, data: &[u8]) -> Result<(), Full> {
        let end = self.pos.checked_add(data.len()).ok_or(Full)?;
        self.bytes
            .get_mut(self.pos..end)
            .ok_or(Full)?
            .copy_from_slice(data);
        self.pos = end;
        Ok(())
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<(), Full> {
        self.put(&v.to_le_bytes())
    }

    pub(crate) fn i32(&mut self, v: i32) -> Result<(), Full> {
        self.put(&v.to_le_bytes())
    }

    pub(crate) fn u64(&mut self, v: u64) -> Result<(), Full> {
        self.put(&v.to_le_bytes())
    }
}
