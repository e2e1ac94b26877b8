//! The arena example's engine, short: three bots and the server over real UDP on
//! 127.0.0.1 with the simulator's bad link between them. A smoke test on the wall
//! clock: it checks what holds however slow the machine (every reliable message once
//! and in order, unreliable ones at most once, every bot connected), never how much
//! arrived in how long; loss, rates and timings are asserted on virtual time
//! (`channel_soak.rs`, `connection_protocol.rs`, `transport_stack.rs`).

use netproto_examples::arena::{Arena, ArenaConfig, ArenaError};
use std::time::Duration;

#[test]
fn a_short_arena_delivers_every_reliable_message_in_order() {
    let config = ArenaConfig {
        bots: 3,
        seconds: 2.0,
        chat_rate: 5.0,
        display_interval: 0.5,
        ..ArenaConfig::default()
    };
    let arena = Arena::local(config).unwrap();
    let mut snapshots = Vec::new();
    let summary = arena.run(|live| snapshots.push(live.clone())).unwrap();
    println!("{summary}");
    assert!(summary.passed(), "{:?}", summary.problems);
    assert!(summary.drained_in.is_some());
    assert_eq!(summary.rows.len(), 3);
    for row in &summary.rows {
        let server = row
            .server
            .as_ref()
            .expect("the local arena counts server side");
        // Reliable: everything, once, in order.
        assert!(row.bot.chats_sent > 0);
        assert_eq!(server.chats_received, row.bot.chats_sent);
        assert_eq!(row.bot.chats_received, server.chats_relayed);
        assert!(row.bot.phases_received > 0);
        // Unreliable: some of it, never more than was sent (how much depends on the
        // link's draws and the machine's speed).
        assert!(server.inputs_received > 0);
        assert!(server.inputs_received <= row.bot.inputs_sent);
        assert!(row.bot.snapshots_received > 0);
        assert!(row.bot.snapshots_received <= server.snapshots_sent);
        assert!(server.snapshots_delta <= server.snapshots_sent);
        // Every bot sees every entity (one per connected client) in its last one.
        assert!(row.bot.entities_seen > 0);
        // The link carried both ways and lost some.
        assert!(row.wire.up_bytes > 0 && row.wire.down_bytes > 0);
    }
    // The messages are packed to about half their naive size.
    let messages = summary.messages();
    assert!(messages.bits / 8 < messages.naive_bytes * 6 / 10);
    // The live display saw the bots connect (how many snapshots a 2-second run takes
    // depends on the machine's speed).
    assert!(!snapshots.is_empty());
    let last = snapshots.last().unwrap();
    assert_eq!(last.connected, Some(3));
    assert!(
        last.bots
            .iter()
            .all(|b| b.client.stats.is_some() && b.server.is_some())
    );
}

#[test]
fn an_impossible_configuration_is_refused() {
    let too_many = ArenaConfig {
        bots: 65,
        ..ArenaConfig::default()
    };
    assert!(matches!(Arena::local(too_many), Err(ArenaError::Config(_))));
    let mut lossy = ArenaConfig::default();
    lossy.link.loss = 1.5;
    assert!(matches!(Arena::local(lossy), Err(ArenaError::Config(_))));
    let mut endless = ArenaConfig::default();
    endless.link.latency = Duration::from_secs(2_000_000_000);
    assert!(matches!(Arena::local(endless), Err(ArenaError::Config(_))));
}

#[test]
fn bots_that_join_late_check_order_from_the_first_line_they_get() {
    // Twelve bots chatting ten lines a second: the far bots finish their handshake
    // after the near ones have chatted, and never get the lines relayed before.
    let config = ArenaConfig {
        bots: 12,
        seconds: 2.0,
        chat_rate: 10.0,
        ..ArenaConfig::default()
    };
    let summary = Arena::local(config).unwrap().run(|_| {}).unwrap();
    assert!(summary.passed(), "{:?}", summary.problems);
    let relayed: Vec<u64> = summary
        .rows
        .iter()
        .map(|r| r.server.as_ref().unwrap().chats_relayed)
        .collect();
    let sent: u64 = summary.rows.iter().map(|r| r.bot.chats_sent).sum();
    // Somebody missed lines sent before it joined (otherwise this test checks
    // nothing new): it was relayed fewer than everyone else's lines.
    assert!(
        summary
            .rows
            .iter()
            .zip(&relayed)
            .any(|(r, &got)| got < sent - r.bot.chats_sent),
        "every bot got every line: {relayed:?}"
    );
}
