//! Zero allocations per tick in steady state for delta snapshots over acked baselines:
//! a counting global allocator watches two clients of the 900-cube scene (one sees
//! everything, one a moving window of it) through [`SnapshotSender::encode_into`],
//! the ack bookkeeping and [`SnapshotReceiver::receive`], with losses and late acks.
//!
//! One test in this file: the allocator counts every thread of the process.

use std::alloc::System;

use netproto::delta::{SnapshotReceiver, SnapshotSender};
use netproto::packet::Sequence;
use netproto::sim::Rng;
use netproto_tests::delta_workload::{CubeScene, cube_scene, cube_tick};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Ticks before counting (the views and the first snapshots settle).
const WARM_UP: u32 = 100;
/// Ticks counted.
const COUNTED: u32 = 600;
/// An ack comes back this many ticks after its packet.
const ACK_LAG: u32 = 4;

struct Client {
    sender: SnapshotSender<CubeScene>,
    receiver: SnapshotReceiver<CubeScene>,
    view: CubeScene,
    buf: Vec<u8>,
    /// Window of ids seen (`None`: all), moved every 30 ticks.
    window: Option<u32>,
    /// Packet sequences delivered, by tick, awaiting their ack (a fixed ring).
    in_flight: [Option<Sequence>; ACK_LAG as usize],
    applied: u64,
}

impl Client {
    fn tick(&mut self, tick: u32, world: &CubeScene) {
        self.view.clear();
        for (id, cube) in world.iter() {
            let seen = match self.window {
                None => true,
                Some(start) => id.wrapping_sub(start + tick / 30 * 8) % 1024 < 300,
            };
            if seen {
                self.view.insert(id, *cube).expect("fits");
            }
        }
        let sent = self
            .sender
            .encode_into(&self.view, &mut self.buf)
            .expect("fits");
        let packet = Sequence(tick as u16);
        assert!(self.sender.sent_in(sent.sequence, packet));
        let slot = (tick % ACK_LAG) as usize;
        if let Some(acked) = self.in_flight[slot].take() {
            self.sender.packet_acked(acked);
        }
        // One packet in 7 is lost; the others arrive and are acked ACK_LAG ticks later.
        if tick % 7 != 3 {
            let applied = self
                .receiver
                .receive(&self.buf[..sent.bytes])
                .expect("applies");
            assert_eq!(applied.sequence, sent.sequence);
            // Exact reconstruction (no Debug print: it would allocate).
            assert!(self.receiver.latest() == Some((sent.sequence, &self.view)));
            self.applied += 1;
            self.in_flight[slot] = Some(packet);
        } else {
            self.sender.packet_lost(packet);
        }
    }
}

#[test]
fn steady_state_ticks_allocate_nothing() {
    let mut rng = Rng::new(27);
    let mut world = cube_scene(&mut rng, 900);
    let mut clients: Vec<Client> = [None, Some(100)]
        .into_iter()
        .map(|window| Client {
            sender: SnapshotSender::new(65000),
            receiver: SnapshotReceiver::new(),
            view: CubeScene::new(),
            buf: vec![0u8; 16 * 1024],
            window,
            in_flight: [None; ACK_LAG as usize],
            applied: 0,
        })
        .collect();
    // Room for the largest view in every ring slot, once.
    for c in clients.iter_mut() {
        c.sender.preallocate(&world);
        c.receiver.preallocate(&world);
    }
    for tick in 0..WARM_UP {
        cube_tick(&mut rng, &mut world, 0.1);
        for c in clients.iter_mut() {
            c.tick(tick, &world);
        }
    }
    let region = Region::new(GLOBAL);
    for tick in WARM_UP..WARM_UP + COUNTED {
        cube_tick(&mut rng, &mut world, 0.1);
        for c in clients.iter_mut() {
            c.tick(tick, &world);
        }
    }
    let change = region.change();
    for c in &clients {
        let s = c.sender.stats();
        assert_eq!(s.full + s.delta, u64::from(WARM_UP + COUNTED));
        assert!(s.delta > s.full);
    }
    println!(
        "{COUNTED} ticks x 2 clients (900 cubes, and a moving window of ~260): {change:?}; \
         client 0 sent {:?}, client 1 sent {:?}",
        clients[0].sender.stats(),
        clients[1].sender.stats()
    );
    assert_eq!(change.allocations, 0, "{change:?}");
    assert_eq!(change.reallocations, 0, "{change:?}");
    assert_eq!(change.bytes_allocated, 0, "{change:?}");
}
