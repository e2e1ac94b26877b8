//! The channel kinds beyond reliable-ordered and unreliable (reliable-unordered, sequenced)
//! and how channels share packets: delivery semantics through lossy, reordering exchanges,
//! hostile payloads on the new kinds, and sharing by priority and weight.

use netproto::Time;
use netproto::channel::{
    BlockConfig, ChannelConfig, ChannelId, ChannelSendError, LayerConfig, LayerConfigError,
    MessageLayer, PayloadError,
};
use netproto::packet::Sequence;
use netproto::sim::Rng;
use netproto::{NetMessage, Stream, StreamError, WriteStream};
use netproto_tests::handmade::{bits, build};

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Num {
    #[net(range = 0..=100_000)]
    n: u32,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Big {
    #[net(max_len = 4000)]
    bytes: Vec<u8>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Num(Num),
    Big(Big),
}

fn num(n: u32) -> Msg {
    Msg::Num(Num { n })
}

const UNORDERED: ChannelId = ChannelId::new(0);
const SEQUENCED: ChannelId = ChannelId::new(1);
const BULK: ChannelId = ChannelId::new(2);

/// Channel 0 reliable-unordered, 1 sequenced (both for `Num` only), 2 bulk with
/// small blocks: `Big` (4000 bytes) fits the preset's 8 KiB packets inline, so the
/// channel takes at most 2000 bits inline and sends 256-byte fragments, two a packet,
/// for `Big` to cross as a block of several packets.
fn config() -> LayerConfig {
    LayerConfig::with_channels(vec![
        ChannelConfig::reliable_unordered()
            .carries::<Msg, Num>()
            .with_queues(64, 64)
            .with_max_messages_per_packet(8),
        ChannelConfig::sequenced()
            .carries::<Msg, Num>()
            .with_max_messages_per_packet(8),
        ChannelConfig::bulk()
            .with_max_message_bits(2000)
            .with_blocks(BlockConfig {
                fragment_size: 256,
                max_fragments_per_packet: 2,
                ..BlockConfig::bulk()
            }),
    ])
}

fn layer() -> MessageLayer<Msg> {
    MessageLayer::new(config()).expect("valid")
}

/// A lossy, reordering link between two layers on virtual time.
struct Link {
    rng: Rng,
    loss: f64,
    sequence: u16,
    now: f64,
}

impl Link {
    fn new(seed: u64, loss: f64) -> Self {
        Self {
            rng: Rng::new(seed),
            loss,
            sequence: 0,
            now: 0.0,
        }
    }

    /// Four packets from `a` to `b`, 50 ms apart, `before` called before each is
    /// written; each lost with `loss`, the others delivered in a shuffled order; acks
    /// go back for what arrived.
    fn round(
        &mut self,
        a: &mut MessageLayer<Msg>,
        b: &mut MessageLayer<Msg>,
        mut before: impl FnMut(&mut MessageLayer<Msg>),
    ) {
        let mut batch = Vec::new();
        for _ in 0..4 {
            before(a);
            let mut payload = Vec::new();
            a.write_packet(
                Time::from_secs_f64(self.now),
                Sequence(self.sequence),
                &mut payload,
            );
            batch.push((Sequence(self.sequence), payload));
            self.sequence = self.sequence.wrapping_add(1);
            self.now += 0.05;
        }
        for i in (1..batch.len()).rev() {
            batch.swap(i, self.rng.below(i as u64 + 1) as usize);
        }
        for (seq, payload) in batch {
            if self.rng.chance(self.loss) {
                continue;
            }
            if b.read_packet(&payload).is_ok() {
                a.on_packet_acked(seq);
            }
        }
    }
}

#[test]
fn reliable_unordered_delivers_everything_once_in_arrival_order() {
    let mut link = Link::new(1, 0.2);
    let (mut a, mut b) = (layer(), layer());
    let mut got = Vec::new();
    let mut next = 0u32;
    for _ in 0..200 {
        link.round(&mut a, &mut b, |a| {
            while next < 500 && a.can_send(UNORDERED) {
                a.send(UNORDERED, num(next)).expect("room");
                next += 1;
            }
        });
        while let Some(Msg::Num(Num { n })) = b.receive(UNORDERED) {
            got.push(n);
        }
    }
    assert_eq!(got.len(), 500, "everything, once");
    let mut sorted = got.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, (0..500).collect::<Vec<_>>());
    assert_ne!(got, sorted, "some message overtook a lost one");
    assert_eq!(a.send_queue_len(UNORDERED), 0);
}

#[test]
fn sequenced_delivers_only_newer_messages() {
    let mut link = Link::new(2, 0.1);
    let (mut a, mut b) = (layer(), layer());
    let mut got = Vec::new();
    let mut next = 0;
    for _ in 0..100 {
        link.round(&mut a, &mut b, |a| {
            a.send(SEQUENCED, num(next)).expect("room");
            next += 1;
        });
        while let Some(Msg::Num(Num { n })) = b.receive(SEQUENCED) {
            got.push(n);
        }
    }
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "strictly newer: {got:?}"
    );
    // Of 400, 10% lost, and reordering within four packets makes about a third stale.
    assert!(got.len() > 150, "enough arrive: {}", got.len());
    assert!(
        b.stats().messages_dropped_stale > 0,
        "reordering made some stale"
    );
}

#[test]
fn sequenced_ids_are_consecutive_and_cost_one_bit() {
    let mut a = layer();
    for n in 0..8 {
        a.send(SEQUENCED, num(n)).expect("room");
    }
    let mut payload = Vec::new();
    a.write_packet(Time::ZERO, Sequence(0), &mut payload);
    // Entry count (2 bits), channel (2), count (4), flag (1), first id (16), then per
    // message: type id (1) + 17 bits, and 1 bit of relative id after the first.
    let bits = 2 + 2 + 4 + 1 + 16 + 8 * 18 + 7;
    assert_eq!(payload.len(), (bits as usize).div_ceil(8));
    let mut b = layer();
    b.read_packet(&payload).expect("valid");
    assert_eq!(b.receive_queue_len(SEQUENCED), 8);
}

type W<'a> = WriteStream<'a>;

/// Entry count 1 (2 bits), channel (2 bits), count in [0, 8] (4 bits), flag (1 bit).
fn entry(w: &mut W<'_>, channel: u64, count: u64, fragments: bool) -> Result<(), StreamError> {
    bits(w, 1, 2)?;
    bits(w, channel, 2)?;
    bits(w, count, 4)?;
    bits(w, u64::from(fragments), 1)
}

/// `Num(n)`: type id 0 (1 bit), n (17 bits).
fn num_bits(w: &mut W<'_>, n: u64) -> Result<(), StreamError> {
    bits(w, 0, 1)?;
    bits(w, n, 17)
}

fn reject(l: &mut MessageLayer<Msg>, payload: &[u8]) -> PayloadError {
    let before = l.stats().payloads_dropped_malformed;
    let e = l.read_packet(payload).expect_err("rejected");
    assert_eq!(l.stats().payloads_dropped_malformed, before + 1, "{e}");
    for c in 0..3 {
        assert_eq!(
            l.receive(ChannelId::new(c)),
            None,
            "{e}: something was delivered"
        );
    }
    e
}

#[test]
fn hostile_sequenced_and_unordered_payloads_are_dropped_whole() {
    let mut l = layer();
    // A valid sequenced entry: ids 9, 10.
    let ok = build(|w| {
        entry(w, SEQUENCED.index() as u64, 2, false)?;
        bits(w, 9, 16)?;
        num_bits(w, 1)?;
        w.serialize_relative(9, &mut 10)?;
        num_bits(w, 2)
    });
    assert_eq!(l.read_packet(&ok), Ok(()));
    assert_eq!(l.receive(SEQUENCED), Some(num(1)));
    assert_eq!(l.receive(SEQUENCED), Some(num(2)));
    // Fragments on a sequenced channel.
    let frag = build(|w| {
        entry(w, SEQUENCED.index() as u64, 1, true)?;
        bits(w, 20, 16)?;
        num_bits(w, 1)
    });
    assert!(matches!(
        reject(&mut l, &frag),
        PayloadError::BadFragment { .. }
    ));
    // Relative ids spanning more than max_messages_per_packet (8): +30.
    let span = build(|w| {
        entry(w, SEQUENCED.index() as u64, 2, false)?;
        bits(w, 20, 16)?;
        num_bits(w, 1)?;
        w.serialize_relative(20, &mut 50)?;
        num_bits(w, 2)
    });
    assert_eq!(
        reject(&mut l, &span),
        PayloadError::IdSpan {
            channel: SEQUENCED.index()
        }
    );
    // A count above the maximum.
    let count = build(|w| entry(w, SEQUENCED.index() as u64, 9, false));
    assert!(matches!(reject(&mut l, &count), PayloadError::Malformed(_)));
    // Truncated after the id.
    let short = build(|w| {
        entry(w, SEQUENCED.index() as u64, 1, false)?;
        bits(w, 20, 16)
    });
    assert!(matches!(reject(&mut l, &short), PayloadError::Malformed(_)));
    // An old id is not an error: dropped as stale, counted.
    let old = build(|w| {
        entry(w, SEQUENCED.index() as u64, 1, false)?;
        bits(w, 3, 16)?;
        num_bits(w, 7)
    });
    assert_eq!(l.read_packet(&old), Ok(()));
    assert_eq!(l.receive(SEQUENCED), None);
    assert_eq!(l.stats().messages_dropped_stale, 1);
    // Reliable-unordered: an id beyond the window is a protocol error.
    let outside = build(|w| {
        entry(w, UNORDERED.index() as u64, 1, false)?;
        bits(w, 64, 16)?;
        num_bits(w, 1)
    });
    assert!(matches!(
        reject(&mut l, &outside),
        PayloadError::OutsideWindow { .. }
    ));
    assert!(l.protocol_error().is_some());
}

#[test]
fn random_and_mutated_payloads_on_every_kind_never_panic() {
    let mut rng = Rng::new(0x16);
    let mut peer = layer();
    let mut valid = Vec::new();
    for i in 0..40u32 {
        let _ = peer.send(UNORDERED, num(i));
        let _ = peer.send(SEQUENCED, num(i + 1));
        if i % 10 == 0 {
            let _ = peer.send(
                BULK,
                Msg::Big(Big {
                    bytes: vec![i as u8; 3000],
                }),
            );
        }
        let mut payload = Vec::new();
        peer.write_packet(
            Time::from_secs_f64(f64::from(i)),
            Sequence(i as u16),
            &mut payload,
        );
        peer.on_packet_acked(Sequence(i as u16));
        valid.push(payload);
    }
    let config = config();
    let bound = config.memory_bound::<Msg>(4000);
    let mut l = layer();
    let (mut accepted, mut delivered) = (0, 0);
    for case in 0..4000 {
        let payload = if case % 2 == 0 {
            let mut p = vec![0u8; rng.below(300) as usize];
            rng.fill_bytes(&mut p);
            p
        } else {
            let mut p = valid[rng.below(valid.len() as u64) as usize].clone();
            for _ in 0..1 + rng.below(3) {
                if p.is_empty() {
                    break;
                }
                let i = rng.below(p.len() as u64) as usize;
                p[i] ^= 1 << rng.below(8);
            }
            p
        };
        accepted += usize::from(l.read_packet(&payload).is_ok());
        for c in 0..3 {
            while l.receive(ChannelId::new(c)).is_some() {
                delivered += 1;
            }
            assert!(
                l.receive_queue_len(ChannelId::new(c)) <= config.channels[c].receive_queue_size
            );
        }
    }
    assert!(accepted > 0 && delivered > 0, "{accepted} {delivered}");
    assert!(bound > 0);
}

#[test]
fn a_download_does_not_starve_snapshots_and_snapshots_do_not_starve_a_download() {
    // Snapshots (1800 bits each) on channel 1 every packet, a large block on the bulk
    // channel 2, and a reliable channel 0: however the indexes go, both make
    // progress in every few packets.
    for snapshot_first in [true, false] {
        let snapshot = ChannelConfig::unreliable().carries::<Msg, Num>();
        let snap_channel = ChannelConfig::unreliable().with_max_message_bits(6000);
        let channels = if snapshot_first {
            vec![snapshot, snap_channel, ChannelConfig::bulk()]
        } else {
            vec![snapshot, ChannelConfig::bulk(), snap_channel]
        };
        let (snap, bulk) = if snapshot_first { (1, 2) } else { (2, 1) };
        let config = LayerConfig::with_channels(channels);
        let mut a = MessageLayer::<Msg>::new(config.clone()).expect("valid");
        let mut b = MessageLayer::<Msg>::new(config).expect("valid");
        a.send(
            ChannelId::new(bulk),
            Msg::Big(Big {
                bytes: vec![7; 4000],
            }),
        )
        .expect("queued");
        let mut snapshots = 0;
        let mut block_done = None;
        for p in 0..40u16 {
            // Big snapshots: two fill a packet on their own.
            for _ in 0..2 {
                let _ = a.send(
                    ChannelId::new(snap),
                    Msg::Big(Big {
                        bytes: vec![1; 400],
                    }),
                );
            }
            let mut payload = Vec::new();
            a.write_packet(Time::from_secs_f64(f64::from(p)), Sequence(p), &mut payload);
            b.read_packet(&payload).expect("valid");
            a.on_packet_acked(Sequence(p));
            while b.receive(ChannelId::new(snap)).is_some() {
                snapshots += 1;
            }
            if b.receive(ChannelId::new(bulk)).is_some() {
                block_done.get_or_insert(p);
            }
        }
        // The block (4 KB, about 5 packets alone) shares packets with snapshots that
        // would fill them all: it gets about half.
        let done = block_done.expect("the block arrived");
        assert!(
            done < 14,
            "block after {done} packets (snapshot first: {snapshot_first})"
        );
        assert!(snapshots >= 30, "{snapshots} snapshots");
    }
}

#[test]
fn weights_share_packets_in_proportion() {
    let config = LayerConfig::with_channels(vec![
        ChannelConfig::unreliable()
            .with_max_message_bits(1000)
            .with_weight(1),
        ChannelConfig::unreliable()
            .with_max_message_bits(1000)
            .with_weight(3),
    ]);
    let big = || {
        Msg::Big(Big {
            bytes: vec![5; 100],
        })
    };
    let mut a = MessageLayer::<Msg>::new(config.clone()).expect("valid");
    let mut b = MessageLayer::<Msg>::new(config).expect("valid");
    let mut got = [0usize; 2];
    for p in 0..100u16 {
        for c in 0..2 {
            while a.send_queue_len(ChannelId::new(c)) < 100 {
                a.send(ChannelId::new(c), big()).expect("room");
            }
        }
        let mut payload = Vec::new();
        a.write_packet(Time::ZERO, Sequence(p), &mut payload);
        b.read_packet(&payload).expect("valid");
        for (c, n) in got.iter_mut().enumerate() {
            while b.receive(ChannelId::new(c)).is_some() {
                *n += 1;
            }
        }
    }
    let ratio = got[1] as f64 / got[0] as f64;
    assert!((2.5..3.5).contains(&ratio), "{got:?}");
}

#[test]
fn limits_name_the_setting_to_change() {
    // A message set with a 32,000-bit message and channels that do not say what
    // they carry: the error says how to fix it.
    let e = MessageLayer::<Msg>::new(LayerConfig::default()).expect_err("too large");
    assert!(matches!(
        e,
        LayerConfigError::BudgetTooSmall { channel: 0, .. }
    ));
    let text = e.to_string();
    assert!(
        text.contains("max_message_bits") && text.contains("ChannelConfig::carries"),
        "{text}"
    );
    // Declared for Num: another type is refused at once, naming both.
    let mut l = layer();
    let e = l
        .send(UNORDERED, Msg::Big(Big { bytes: vec![0; 10] }))
        .expect_err("not carried");
    assert!(
        matches!(
            e,
            ChannelSendError::WrongType {
                declared: "Num",
                sent: "Big",
                ..
            }
        ),
        "{e:?}"
    );
    // Limited by size alone: the channel refuses a larger message, naming the fix.
    let small = ChannelConfig::reliable().with_max_message_bits(100);
    let mut l = MessageLayer::<Msg>::new(LayerConfig::with_channels(vec![small])).expect("valid");
    let e = l
        .send(ChannelId::new(0), Msg::Big(Big { bytes: vec![0; 20] }))
        .expect_err("too large");
    assert!(matches!(e, ChannelSendError::TooLarge { .. }), "{e:?}");
    assert!(e.to_string().contains("ChannelConfig::bulk"), "{e}");
    let blocks =
        LayerConfig::with_channels(vec![ChannelConfig::reliable().with_blocks(BlockConfig {
            fragment_size: 2000,
            ..BlockConfig::default()
        })]);
    let e = MessageLayer::<Msg>::new(blocks).expect_err("fragment too large");
    assert!(e.to_string().contains("blocks.fragment_size"), "{e}");
}

#[test]
fn progress_follows_a_block_on_both_sides() {
    let (mut a, mut b) = (layer(), layer());
    a.send(
        BULK,
        Msg::Big(Big {
            bytes: vec![3; 4000],
        }),
    )
    .expect("queued");
    assert_eq!(a.send_progress(BULK).map(|p| p.bytes), Some(0));
    let total = a.send_progress(BULK).expect("queued").total;
    assert!(total > 4000);
    let mut last = (0, 0);
    for p in 0..10u16 {
        let mut payload = Vec::new();
        a.write_packet(Time::ZERO, Sequence(p), &mut payload);
        b.read_packet(&payload).expect("valid");
        if let Some(r) = b.receive_progress(BULK) {
            assert_eq!(r.total, total);
            assert!(r.bytes >= last.1 && r.bytes < total);
            last.1 = r.bytes;
        }
        a.on_packet_acked(Sequence(p));
        if let Some(s) = a.send_progress(BULK) {
            assert!(s.bytes >= last.0 && s.bytes < total && s.fraction() < 1.0);
            last.0 = s.bytes;
        }
    }
    assert!(last.0 > 0 && last.1 > 0, "progress was seen: {last:?}");
    assert_eq!(a.send_progress(BULK), None, "acked and released");
    assert_eq!(b.receive_progress(BULK), None, "complete");
    assert!(matches!(b.receive(BULK), Some(Msg::Big(_))));
}
