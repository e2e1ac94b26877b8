//! [`Entities`]: a keyed collection of entities with a full form and a delta form.

use core::fmt;

use crate::bits::bits_required;
use crate::error::ErrorKind;
use crate::stream::{NetMessage, Place, Stream};

use super::NetDelta;

/// Entities keyed by id, sorted by id, with ids in `0..=MAX_ID` and at most `MAX_LEN`
/// of them: the state of a scene, sent whole ([`NetMessage`]) or as a delta against a
/// baseline ([`NetDelta`]).
///
/// **Full form**: the count in `bits_required(0, MAX_LEN)` bits, then (when not empty)
/// the Exp-Golomb parameter `k` and each entity as its gap-coded id and its value.
///
/// **Delta form**: three lists, each a count, `k` (when not empty) and gap-coded ids:
/// `removed` (ids of the baseline that are gone), `changed` (ids in both whose value
/// changed, each followed by its value's delta form) and `added` (ids the baseline
/// lacks, each followed by its value whole). An unchanged entity costs nothing: it is in
/// no list.
///
/// **Ids** are gap-coded: the gap `n = id - previous - 1` (the first id is its own
/// gap) in order-`k` Exp-Golomb, `2 * floor(log2(n + 2^k)) - k + 1` bits: `k + 1` bits
/// for gaps below `2^k`, two more bits per doubling above. The writer picks the `k`
/// that makes each list shortest (it sends `k` in `bits_required(0, bits of MAX_ID)`
/// bits), so dense lists (every entity moving: gaps of 0, 1 bit each) and sparse ones
/// (10% of 900 moving: gaps around 10) both code near their entropy without a tuning
/// knob. Ids cannot be out of order on the wire (gaps are non-negative by construction).
///
/// **Reading** never allocates from an unchecked count: counts are bounded by
/// `MAX_LEN` and by the baseline, and checked against the remaining input before
/// anything is reserved. The reader rejects an id above `MAX_ID`, removing or changing
/// an id the baseline lacks, and adding an id the baseline has
/// ([`ErrorKind::OutOfRange`]), and a result of more than `MAX_LEN` entities
/// ([`ErrorKind::TooLong`]).
///
/// ```
/// use netproto::NetMessage;
/// use netproto::delta::{Entities, NetDelta, decode_delta, encode_delta};
///
/// #[derive(NetMessage, Clone, Debug, PartialEq)]
/// #[net(delta)]
/// struct Body {
///     #[net(range = 0..=1000, delta = -7..=7)]
///     x: u16,
/// }
///
/// let mut base: Entities<Body, 1023, 64> = Entities::new();
/// for id in [3, 10, 11] {
///     base.insert(id, Body { x: 100 }).unwrap();
/// }
/// let mut now = base.clone();
/// now.get_mut(10).unwrap().x = 103;
/// now.remove(11);
/// now.insert(40, Body { x: 7 }).unwrap();
/// let bytes = encode_delta(&now, &base).unwrap();
/// assert_eq!(decode_delta(&bytes, &base).unwrap(), now);
/// ```
pub struct Entities<T, const MAX_ID: u32, const MAX_LEN: usize> {
    /// Strictly increasing ids, each `<= MAX_ID`; at most `MAX_LEN` entries.
    items: Vec<(u32, T)>,
}

impl<T, const MAX_ID: u32, const MAX_LEN: usize> Entities<T, MAX_ID, MAX_LEN> {
    /// Bits of the largest id: the largest useful Exp-Golomb parameter.
    const K_MAX: u32 = bits_required(0, MAX_ID as u64);
    /// Bits of a count.
    const LEN_BITS: usize = bits_required(0, MAX_LEN as u64) as usize;
    /// Bits of `k`.
    const K_BITS: usize = bits_required(0, Self::K_MAX as u64) as usize;
    /// A list's header without `k` ... and with it.
    const HEADER_BITS: usize = Self::LEN_BITS + Self::K_BITS;
    /// The most bits one gap-coded id takes, over every `k`.
    const GAP_MAX_BITS: usize = {
        let mut k = 0;
        let mut most = 0;
        while k <= Self::K_MAX {
            let bits = gap_bits(MAX_ID as u64, k);
            if bits > most {
                most = bits;
            }
            k += 1;
        }
        most
    };

    /// An empty collection.
    pub const fn new() -> Self {
        Self { items: Vec::new() }
    }

    /// The number of entities.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes every entity (keeping the allocation).
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// The entities as `(id, value)` pairs, by increasing id.
    pub fn as_slice(&self) -> &[(u32, T)] {
        &self.items
    }

    /// The entities by increasing id.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.items.iter().map(|(id, v)| (*id, v))
    }

    /// The entities by increasing id, values mutable (ids are not).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut T)> {
        self.items.iter_mut().map(|(id, v)| (*id, v))
    }

    /// The entity `id`, if present.
    pub fn get(&self, id: u32) -> Option<&T> {
        let at = self.items.binary_search_by_key(&id, |e| e.0).ok()?;
        self.items.get(at).map(|e| &e.1)
    }

    /// The entity `id`, mutably, if present.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        let at = self.items.binary_search_by_key(&id, |e| e.0).ok()?;
        self.items.get_mut(at).map(|e| &mut e.1)
    }

    /// Inserts or replaces entity `id`, returning the value it replaces. Fails with
    /// [`ErrorKind::OutOfRange`] when `id > MAX_ID` and [`ErrorKind::TooLong`] when a
    /// new id would make more than `MAX_LEN` entities (nothing is changed then).
    pub fn insert(&mut self, id: u32, value: T) -> Result<Option<T>, ErrorKind> {
        if id > MAX_ID {
            return Err(ErrorKind::OutOfRange);
        }
        match self.items.binary_search_by_key(&id, |e| e.0) {
            Ok(at) => Ok(self
                .items
                .get_mut(at)
                .map(|e| core::mem::replace(&mut e.1, value))),
            Err(at) => {
                if self.items.len() >= MAX_LEN {
                    return Err(ErrorKind::TooLong);
                }
                self.items.insert(at, (id, value));
                Ok(None)
            }
        }
    }

    /// Removes entity `id`, returning its value if it was present.
    pub fn remove(&mut self, id: u32) -> Option<T> {
        let at = self.items.binary_search_by_key(&id, |e| e.0).ok()?;
        Some(self.items.remove(at).1)
    }

    /// Keeps only the entities for which `keep(id, value)` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(u32, &mut T) -> bool) {
        self.items.retain_mut(|(id, v)| keep(*id, v));
    }
}

impl<T, const MAX_ID: u32, const MAX_LEN: usize> Default for Entities<T, MAX_ID, MAX_LEN> {
    fn default() -> Self {
        Self::new()
    }
}

/// `clone_from` reuses the allocation (a snapshot ring copies baselines every tick).
impl<T: Clone, const MAX_ID: u32, const MAX_LEN: usize> Clone for Entities<T, MAX_ID, MAX_LEN> {
    fn clone(&self) -> Self {
        Self {
            items: self.items.clone(),
        }
    }
    fn clone_from(&mut self, source: &Self) {
        self.items.clone_from(&source.items);
    }
}

impl<T: PartialEq, const MAX_ID: u32, const MAX_LEN: usize> PartialEq
    for Entities<T, MAX_ID, MAX_LEN>
{
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl<T: Eq, const MAX_ID: u32, const MAX_LEN: usize> Eq for Entities<T, MAX_ID, MAX_LEN> {}

impl<T: fmt::Debug, const MAX_ID: u32, const MAX_LEN: usize> fmt::Debug
    for Entities<T, MAX_ID, MAX_LEN>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Bits of gap `n` in order-`k` Exp-Golomb: `2 * floor(log2(n + 2^k)) - k + 1`.
const fn gap_bits(n: u64, k: u32) -> usize {
    let m = n + (1u64 << k);
    let top = 63 - m.leading_zeros();
    (2 * top - k + 1) as usize
}

/// Gaps below this are counted by value in [`ListCost`]; larger ones add their cost
/// under every `k` as they come.
const SMALL_GAPS: usize = 64;

/// One list's writer-side summary, built in a single pass over its ids: the count and
/// what the list's gaps cost under every Exp-Golomb parameter `k`, so the list's `k` is
/// chosen without walking the ids again.
///
/// A gap below [`SMALL_GAPS`] (all of them in a dense or moderately sparse list) costs
/// one increment of its count; the costs under each `k` are summed from the counts once,
/// in [`ListCost::best_k`]. The costs are exact either way.
struct ListCost {
    count: usize,
    previous: Option<u32>,
    /// How many gaps of each value below `SMALL_GAPS`.
    small: [u32; SMALL_GAPS],
    /// One more than the largest small gap seen (the counts past it are 0).
    small_end: usize,
    /// The cost under each `k` of the gaps from `SMALL_GAPS` up.
    large: [usize; 33],
    k_max: u32,
}

impl ListCost {
    fn new(k_max: u32) -> Self {
        Self {
            count: 0,
            previous: None,
            small: [0; SMALL_GAPS],
            small_end: 0,
            large: [0; 33],
            k_max,
        }
    }

    /// Adds the next id (ids increase).
    #[inline(always)]
    fn push(&mut self, id: u32) {
        let n = gap_of(self.previous, id);
        self.previous = Some(id);
        self.count += 1;
        match self.small.get_mut(n as usize) {
            Some(count) => {
                *count += 1;
                self.small_end = self.small_end.max(n as usize + 1);
            }
            None => self.push_large(n),
        }
    }

    #[inline(never)]
    fn push_large(&mut self, n: u64) {
        for (k, c) in self
            .large
            .iter_mut()
            .enumerate()
            .take(self.k_max as usize + 1)
        {
            *c += gap_bits(n, k as u32);
        }
    }

    /// The `k` in `0..=k_max` that codes the gaps in the fewest bits (the smallest such
    /// `k` on a tie; 0 for an empty list, which sends no `k`).
    fn best_k(&self) -> u32 {
        if self.count == 0 {
            return 0;
        }
        let mut cost = self.large;
        for (n, &count) in self.small.iter().enumerate().take(self.small_end) {
            if count == 0 {
                continue;
            }
            for (k, c) in cost.iter_mut().enumerate().take(self.k_max as usize + 1) {
                *c += count as usize * gap_bits(n as u64, k as u32);
            }
        }
        let mut best = 0;
        for k in 1..=self.k_max as usize {
            if cost[k] < cost[best] {
                best = k;
            }
        }
        best as u32
    }
}

/// The gap before `id`: `id - previous - 1`, or `id` for the first.
#[inline(always)]
fn gap_of(previous: Option<u32>, id: u32) -> u64 {
    match previous {
        Some(p) => u64::from(id) - u64::from(p) - 1,
        None => u64::from(id),
    }
}

/// One gap-coded id after `previous` (traced as `id`): writes (or measures) `*id`, or
/// reads it. The reader rejects an id above `max_id` (and a prefix longer than any such
/// id needs) with [`ErrorKind::OutOfRange`]; it reads at most `2 * 34` bits.
#[inline(always)]
fn gap_id<S: Stream>(
    stream: &mut S,
    previous: Option<u32>,
    id: &mut u32,
    k: u32,
    max_id: u32,
) -> Result<(), S::Error> {
    if S::TRACING {
        stream.begin_field("id");
    }
    if !S::IS_READING {
        // The prefix (`zeros` zero bits and a one) and the `top` low bits of `m`, in one
        // write when they fit in a word (every id below 2^31).
        let m = gap_of(previous, *id) + (1u64 << k);
        let zeros = 63 - m.leading_zeros() - k;
        let top = zeros + k;
        let low = m & ((1u64 << top) - 1);
        let width = zeros + 1 + top;
        if width <= 64 {
            let mut word = (1u64 << zeros) | (low << 1 << zeros);
            stream.serialize_bits(&mut word, width)?;
        } else {
            let (mut prefix, mut low) = (1u64 << zeros, low);
            stream.serialize_bits(&mut prefix, zeros + 1)?;
            stream.serialize_bits(&mut low, top)?;
        }
        if S::TRACING {
            stream.annotate(format_args!("id {id}"));
            stream.end_field();
        }
        return Ok(());
    }
    let start = previous.map_or(0, |p| u64::from(p) + 1);
    // The longest prefix a valid id can need.
    let max_zeros = 63 - (u64::from(max_id) + (1u64 << k)).leading_zeros() - k;
    let mut zeros = 0;
    loop {
        let mut bit = 0;
        stream.serialize_bits(&mut bit, 1)?;
        if bit == 1 {
            break;
        }
        zeros += 1;
        stream.check(zeros <= max_zeros, ErrorKind::OutOfRange)?;
    }
    let top = zeros + k;
    let mut low = 0;
    if top > 0 {
        stream.serialize_bits(&mut low, top)?;
    }
    let value = start + ((1u64 << top) | low) - (1u64 << k);
    stream.check(value <= u64::from(max_id), ErrorKind::OutOfRange)?;
    *id = value as u32;
    if S::TRACING {
        stream.end_field();
    }
    Ok(())
}

/// A list's count and `k` (traced as `count` and `k`): the writer sends `len` and `k`
/// (chosen by [`ListCost::best_k`]); returns the count and `k` (the reader's).
fn list_header<S: Stream>(
    stream: &mut S,
    len: usize,
    k: u32,
    max_len: usize,
    k_max: u32,
) -> Result<(usize, u32), S::Error> {
    let mut count = len;
    if S::TRACING {
        stream.begin_field("count");
    }
    stream.serialize_len(&mut count, max_len)?;
    if S::TRACING {
        stream.end_field();
        stream.begin_field("k");
    }
    let mut k = if S::IS_READING { 0 } else { k };
    if count > 0 {
        stream.serialize_int(&mut k, 0, k_max)?;
    }
    if S::TRACING {
        stream.end_field();
    }
    Ok((count, k))
}

/// One step of the merge of a value's ids with its baseline's.
enum Op<'a, T> {
    Removed(u32),
    /// An id in both: the positions in the value and in the baseline, and the two.
    Both(u32, (usize, usize), &'a T, &'a T),
    Added(u32, &'a T),
}

/// The merge of `now[i..]` and `base[j..]` by id (positions are of the whole slices).
fn merge<'a, T>(
    now: &'a [(u32, T)],
    base: &'a [(u32, T)],
    (mut i, mut j): (usize, usize),
) -> impl Iterator<Item = Op<'a, T>> + Clone {
    core::iter::from_fn(move || match (now.get(i), base.get(j)) {
        (Some((a, va)), Some((b, vb))) => Some(if a == b {
            i += 1;
            j += 1;
            Op::Both(*a, (i - 1, j - 1), va, vb)
        } else if a < b {
            i += 1;
            Op::Added(*a, va)
        } else {
            j += 1;
            Op::Removed(*b)
        }),
        (Some((a, va)), None) => {
            i += 1;
            Some(Op::Added(*a, va))
        }
        (None, Some((b, _))) => {
            j += 1;
            Some(Op::Removed(*b))
        }
        (None, None) => None,
    })
}

/// Writes (or measures) a list of `cost.count` items: header (with the `k` `cost`
/// chooses), then each id and its payload. `items` must yield the ids `cost` was built
/// from; it is not walked when the list is empty.
fn write_list<'a, S: Stream, X: 'a, const MAX_ID: u32>(
    stream: &mut S,
    name: Option<&'static str>,
    max_len: usize,
    cost: &ListCost,
    items: impl Iterator<Item = (u32, X)>,
    mut payload: impl FnMut(&mut S, X) -> Result<(), S::Error>,
) -> Result<(), S::Error> {
    if S::TRACING
        && let Some(name) = name
    {
        stream.begin_field(name);
    }
    let k_max = bits_required(0, u64::from(MAX_ID));
    let (count, k) = list_header(stream, cost.count, cost.best_k(), max_len, k_max)?;
    let mut previous = None;
    for (id, x) in items.take(count) {
        let mut id = id;
        gap_id(stream, previous, &mut id, k, MAX_ID)?;
        previous = Some(id);
        if S::TRACING {
            stream.begin_field("value");
        }
        payload(stream, x)?;
        if S::TRACING {
            stream.end_field();
        }
    }
    if S::TRACING && name.is_some() {
        stream.end_field();
    }
    Ok(())
}

/// Reads a list's header (traced under `name`): the count, bounded by `most`, and `k`.
fn read_header<S: Stream>(
    stream: &mut S,
    name: &'static str,
    max_len: usize,
    most: usize,
    k_max: u32,
) -> Result<(usize, u32), S::Error> {
    if S::TRACING {
        stream.begin_field(name);
    }
    let (count, k) = list_header(stream, 0, 0, max_len, k_max)?;
    stream.check(count <= most, ErrorKind::OutOfRange)?;
    if S::TRACING {
        stream.end_field();
    }
    Ok((count, k))
}

impl<T: NetMessage, const MAX_ID: u32, const MAX_LEN: usize> NetMessage
    for Entities<T, MAX_ID, MAX_LEN>
{
    const MAX_BITS: usize = Self::HEADER_BITS + MAX_LEN * (Self::GAP_MAX_BITS + T::MAX_BITS);
    const MIN_BITS: usize = Self::LEN_BITS;

    fn blank() -> Self {
        Self::new()
    }

    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        if !S::IS_READING {
            let items = &this.get().items;
            let mut cost = ListCost::new(Self::K_MAX);
            for (id, _) in items {
                cost.push(*id);
            }
            let items = items.iter().map(|(id, v)| (*id, v));
            return write_list::<S, &T, MAX_ID>(stream, None, MAX_LEN, &cost, items, |s, v| {
                s.serialize_message(v)
            });
        }
        let mut scratch = Self::new();
        let out = match this.get_mut() {
            Some(out) => out,
            None => &mut scratch,
        };
        out.items.clear();
        let (count, k) = list_header(stream, 0, 0, MAX_LEN, Self::K_MAX)?;
        reserve_checked::<S, T>(stream, &mut out.items, count)?;
        let mut previous = None;
        for _ in 0..count {
            let mut id = 0;
            gap_id(stream, previous, &mut id, k, MAX_ID)?;
            previous = Some(id);
            let mut value = T::blank();
            T::serialize_in(&mut value, stream)?;
            out.items.push((id, value));
        }
        Ok(())
    }
}

/// Reserves room for `count` more entities read from `stream`, after checking that the
/// remaining input can hold them (each takes at least 1 bit of id and `T::MIN_BITS`)
/// and never more than the input has bytes for.
fn reserve_checked<S: Stream, T: NetMessage>(
    stream: &mut S,
    items: &mut Vec<(u32, T)>,
    count: usize,
) -> Result<(), S::Error> {
    let per_item = 1 + T::MIN_BITS;
    stream.check(
        count <= stream.bits_remaining() / per_item,
        ErrorKind::PastEnd,
    )?;
    let by_memory = (stream.bits_remaining() / 8).max(64) / size_of::<(u32, T)>().max(1);
    items.reserve(count.min(by_memory));
    Ok(())
}

impl<T: NetDelta, const MAX_ID: u32, const MAX_LEN: usize> NetDelta
    for Entities<T, MAX_ID, MAX_LEN>
{
    // Removed and changed entities are entities of the baseline (at most MAX_LEN of
    // them, a removed one the cheaper); added ones are at most MAX_LEN.
    const DELTA_MAX_BITS: usize = 3 * Self::HEADER_BITS
        + MAX_LEN * (Self::GAP_MAX_BITS + T::DELTA_MAX_BITS)
        + MAX_LEN * (Self::GAP_MAX_BITS + T::MAX_BITS);

    fn delta_changed(&self, base: &Self) -> bool {
        self.items.len() != base.items.len()
            || self
                .items
                .iter()
                .zip(&base.items)
                .any(|(a, b)| a.0 != b.0 || a.1.delta_changed(&b.1))
    }

    fn serialize_delta_in<S: Stream, P: Place<Self>>(
        mut this: P,
        base: &Self,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        if !S::IS_READING {
            return write_delta::<S, T, MAX_ID, MAX_LEN>(
                stream,
                &this.get().items,
                &base.items,
                Self::K_MAX,
            );
        }
        let mut scratch = Self::new();
        let out = match this.get_mut() {
            Some(out) => out,
            None => &mut scratch,
        };
        out.items.clone_from(&base.items);
        read_removed(stream, &mut out.items, MAX_ID, MAX_LEN)?;
        read_changed(stream, &mut out.items, &base.items, MAX_ID, MAX_LEN)?;
        read_added(stream, &mut out.items, &base.items, MAX_ID, MAX_LEN)
    }
}

/// Changed entities whose positions the writer keeps from its first pass (on the stack,
/// 8 KiB: no allocation), so that it writes them without walking the merge again; any
/// beyond are found by a merge walk resumed after the last one kept.
const KEPT: usize = 1024;

/// Writes (or measures) the delta form of `now` against `base`.
///
/// One merge pass asks [`NetDelta::delta_changed`] once per shared entity, keeps the
/// positions of the first [`KEPT`] changed ones, and counts each list's ids and their
/// gap costs for every `k`; then each non-empty list is written from that (the changed
/// list from the kept positions). The bytes are those of the three-list form the type
/// documents.
fn write_delta<S: Stream, T: NetDelta, const MAX_ID: u32, const MAX_LEN: usize>(
    stream: &mut S,
    now: &[(u32, T)],
    base: &[(u32, T)],
    k_max: u32,
) -> Result<(), S::Error> {
    let mut kept = [(0u32, 0u32); KEPT];
    let mut n_kept = 0;
    // Where the walk for the changed entities past the kept ones starts.
    let mut resume = None;
    let mut removed = ListCost::new(k_max);
    let mut changed = ListCost::new(k_max);
    let mut added = ListCost::new(k_max);
    for op in merge(now, base, (0, 0)) {
        match op {
            Op::Removed(id) => removed.push(id),
            Op::Both(id, (i, j), a, b) => {
                if a.delta_changed(b) {
                    changed.push(id);
                    let at = (u32::try_from(i), u32::try_from(j));
                    match (kept.get_mut(n_kept), at) {
                        (Some(slot), (Ok(i), Ok(j))) if resume.is_none() => {
                            *slot = (i, j);
                            n_kept += 1;
                        }
                        _ => {
                            resume.get_or_insert((i, j));
                        }
                    }
                }
            }
            Op::Added(id, _) => added.push(id),
        }
    }
    let gone = merge(now, base, (0, 0)).filter_map(|op| match op {
        Op::Removed(id) => Some((id, ())),
        _ => None,
    });
    write_list::<S, (), MAX_ID>(stream, Some("removed"), MAX_LEN, &removed, gone, |_, ()| {
        Ok(())
    })?;
    let first = kept.iter().take(n_kept).filter_map(|&(i, j)| {
        let (id, a) = now.get(i as usize)?;
        let (_, b) = base.get(j as usize)?;
        Some((*id, (a, b)))
    });
    let rest = resume
        .into_iter()
        .flat_map(|from| merge(now, base, from))
        .filter_map(|op| match op {
            Op::Both(id, _, a, b) if a.delta_changed(b) => Some((id, (a, b))),
            _ => None,
        });
    write_list::<S, (&T, &T), MAX_ID>(
        stream,
        Some("changed"),
        MAX_LEN,
        &changed,
        first.chain(rest),
        |s, (a, b)| s.serialize_delta(a, b),
    )?;
    let new = merge(now, base, (0, 0)).filter_map(|op| match op {
        Op::Added(id, a) => Some((id, a)),
        _ => None,
    });
    write_list::<S, &T, MAX_ID>(stream, Some("added"), MAX_LEN, &added, new, |s, a| {
        s.serialize_message(a)
    })
}

/// Reads the removed list and removes its ids from `out` (a copy of the baseline), in
/// place: every id must be there.
fn read_removed<S: Stream, T>(
    stream: &mut S,
    out: &mut Vec<(u32, T)>,
    max_id: u32,
    max_len: usize,
) -> Result<(), S::Error> {
    let k_max = bits_required(0, u64::from(max_id));
    let (count, k) = read_header(stream, "removed", max_len, out.len(), k_max)?;
    let mut left = count;
    let mut next = None;
    if left > 0 {
        let mut id = 0;
        gap_id(stream, None, &mut id, k, max_id)?;
        next = Some(id);
    }
    let mut kept = 0;
    for at in 0..out.len() {
        let id = out[at].0;
        if let Some(gone) = next {
            // Ids increase: one below this entity's is one the baseline lacks.
            stream.check(gone >= id, ErrorKind::OutOfRange)?;
            if gone == id {
                left -= 1;
                next = None;
                if left > 0 {
                    let mut following = 0;
                    gap_id(stream, Some(gone), &mut following, k, max_id)?;
                    next = Some(following);
                }
                continue;
            }
        }
        out.swap(kept, at);
        kept += 1;
    }
    // An id above every baseline id is one the baseline lacks.
    stream.check(next.is_none(), ErrorKind::OutOfRange)?;
    out.truncate(kept);
    Ok(())
}

/// Reads the changed list: each id must be in `out` (the baseline less the removed),
/// its value read as a delta against the baseline's.
fn read_changed<S: Stream, T: NetDelta>(
    stream: &mut S,
    out: &mut [(u32, T)],
    base: &[(u32, T)],
    max_id: u32,
    max_len: usize,
) -> Result<(), S::Error> {
    let k_max = bits_required(0, u64::from(max_id));
    let (count, k) = read_header(stream, "changed", max_len, out.len(), k_max)?;
    let (mut at, mut at_base) = (0, 0);
    let mut previous = None;
    for _ in 0..count {
        let mut id = 0;
        gap_id(stream, previous, &mut id, k, max_id)?;
        previous = Some(id);
        while (*out).get(at).is_some_and(|e| e.0 < id) {
            at += 1;
        }
        while base.get(at_base).is_some_and(|e| e.0 < id) {
            at_base += 1;
        }
        let (Some(slot), Some(then)) = ((*out).get_mut(at), base.get(at_base)) else {
            stream.check(false, ErrorKind::OutOfRange)?;
            return Ok(());
        };
        stream.check(slot.0 == id && then.0 == id, ErrorKind::OutOfRange)?;
        T::serialize_delta_in(&mut slot.1, &then.1, stream)?;
        at += 1;
        at_base += 1;
    }
    Ok(())
}

/// Reads the added list: ids the baseline lacks, values whole; then restores the order.
fn read_added<S: Stream, T: NetMessage>(
    stream: &mut S,
    out: &mut Vec<(u32, T)>,
    base: &[(u32, T)],
    max_id: u32,
    max_len: usize,
) -> Result<(), S::Error> {
    let k_max = bits_required(0, u64::from(max_id));
    let room = max_len - out.len().min(max_len);
    let (count, k) = read_header(stream, "added", max_len, max_len, k_max)?;
    stream.check(count <= room, ErrorKind::TooLong)?;
    reserve_checked::<S, T>(stream, out, count)?;
    let kept = out.len();
    let mut at_base = 0;
    let mut previous = None;
    for _ in 0..count {
        let mut id = 0;
        gap_id(stream, previous, &mut id, k, max_id)?;
        previous = Some(id);
        while base.get(at_base).is_some_and(|e| e.0 < id) {
            at_base += 1;
        }
        stream.check(
            base.get(at_base).is_none_or(|e| e.0 != id),
            ErrorKind::OutOfRange,
        )?;
        let mut value = T::blank();
        T::serialize_in(&mut value, stream)?;
        out.push((id, value));
    }
    let in_order = match (
        kept.checked_sub(1).and_then(|i| out.as_slice().get(i)),
        out.as_slice().get(kept),
    ) {
        (Some(last), Some(first)) => last.0 < first.0,
        _ => true,
    };
    if !in_order {
        // Both runs are sorted and their ids disjoint; no allocation.
        out.sort_unstable_by_key(|e| e.0);
    }
    Ok(())
}

/// [`gap_id`] for the unit tests.
#[cfg(test)]
pub(super) fn gap_id_for_tests<S: Stream>(
    stream: &mut S,
    previous: Option<u32>,
    id: &mut u32,
    k: u32,
    max_id: u32,
) -> Result<(), S::Error> {
    gap_id(stream, previous, id, k, max_id)
}

/// [`gap_bits`] for the unit tests.
#[cfg(test)]
pub(super) fn gap_bits_for_tests(n: u64, k: u32) -> usize {
    gap_bits(n, k)
}
