//! Target: the connection's receive path from unknown addresses (a server alone).

use super::*;
use netproto::Time;

/// What [`connection_unknown_outcome`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnknownOutcome {
    /// Challenges the server sent (each checked: a request whose token opens).
    pub challenges: u64,
    /// Sessions created (each checked: a response to our challenge, sealed with the
    /// token's key, carrying a challenge token that opens).
    pub sessions: u64,
    /// Payloads delivered to the layer above (only from connected addresses).
    pub payloads: u64,
    /// Digest of every reply and the final counters (the determinism check).
    pub trace: u64,
}

/// [`connection_unknown_outcome`]: challenges + sessions + payloads.
pub fn connection_unknown(data: &[u8]) -> usize {
    let o = connection_unknown_outcome(data);
    (o.challenges + o.sessions + o.payloads) as usize
}

/// Ops: the low 2 bits of the op byte pick the sender among 4 addresses, then a blob
/// is the datagram; op `0xFF` advances the clock 1 s and updates. The server has the
/// fixed [`PRIVATE_KEY`] and [`CHALLENGE_KEY`], so the requests and responses of the
/// seeds are valid. Checks, per datagram: replies go to the sender and are no larger
/// than the datagram (no amplification); a datagram the server drops changes nothing
/// but one drop counter (no table entry, no reply, no event); a challenge answers only
/// a request whose token opens with the private key and names this server; a session
/// is created only by a response, sealed with that token's client key, whose
/// challenge token opens; payloads come only from connected addresses; the tables
/// stay within their limits and are empty while no token opened; the script run
/// twice gives the same trace.
pub fn connection_unknown_outcome(data: &[u8]) -> UnknownOutcome {
    let a = run_unknown(data);
    let b = run_unknown(data);
    assert_eq!(a, b, "the server is not deterministic");
    a
}

/// What the harness learned of a challenge it saw the server send.
struct Challenged {
    c2s: Key,
    client_id: u64,
}

fn run_unknown(data: &[u8]) -> UnknownOutcome {
    let private_key = Key::from_bytes(PRIVATE_KEY);
    let config = server_config(private_key.clone(), Key::from_bytes(CHALLENGE_KEY));
    let protocol_id = config.connection.protocol_id;
    let max_packet = config.connection.endpoint.max_packet_size;
    let mut server: Server<u32> = Server::new(config, Time::ZERO, UNIX_TIME).expect("valid server");
    let mut out = UnknownOutcome {
        trace: 0xcbf2_9ce4_8422_2325,
        ..UnknownOutcome::default()
    };
    let mut challenged: HashMap<u32, Challenged> = HashMap::new();
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let mut now = 0.0;
    let mut handled = 0u64;
    let mut script = Script::new(data);
    while let Some(op) = script.byte() {
        if op == 0xFF {
            now += 1.0;
            server.update(Time::from_secs_f64(now));
            while let Some((_, len)) = server.poll_transmit(&mut buf) {
                digest(&mut out.trace, &buf[..len]);
            }
            while server.poll_event().is_some() {}
            continue;
        }
        let from = u32::from(op & 3);
        let datagram = script.blob();
        let before = *server.server_stats();
        let state = server_state(&server);
        let was_connected = server.client_id(&from).is_some();
        if let Some(delivery) = server.handle_datagram(Time::from_secs_f64(now), from, datagram) {
            assert!(was_connected, "a payload from an unconnected address");
            assert!(delivery.payload().len() <= max_packet, "oversized payload");
            let _ = delivery.accept();
            out.payloads += 1;
        }
        handled += 1;
        let after = *server.server_stats();
        let mut replies = Vec::new();
        while let Some((to, len)) = server.poll_transmit(&mut buf) {
            assert_eq!(to, from, "a reply went to someone else");
            assert!(
                len <= datagram.len(),
                "a reply of {len} bytes to a datagram of {}",
                datagram.len()
            );
            digest(&mut out.trace, &buf[..len]);
            replies.push(buf[..len].to_vec());
        }
        let mut events = Vec::new();
        while let Some(event) = server.poll_event() {
            events.push(event);
        }
        assert_eq!(after.datagrams_received, before.datagrams_received + 1);
        let dropped = drops(&after) - drops(&before);
        assert!(dropped <= 1, "one datagram counted {dropped} times");
        if dropped == 1 {
            assert_eq!(
                without_drops(after),
                without_drops(before),
                "a dropped datagram changed a counter"
            );
            assert_eq!(
                server_state(&server),
                state,
                "a dropped datagram changed the server"
            );
            assert!(
                replies.is_empty() && events.is_empty(),
                "a dropped datagram was answered"
            );
        }
        if after.challenges_sent > before.challenges_sent {
            assert_eq!(after.challenges_sent, before.challenges_sent + 1);
            let (client_id, c2s, s2c) = open_request(datagram, protocol_id, &private_key)
                .unwrap_or_else(|| {
                    panic!(
                        "a challenge answered {:?}",
                        &datagram[..8.min(datagram.len())]
                    )
                });
            assert_eq!(replies.len(), 1, "one challenge per request");
            let mut reply = replies[0].clone();
            let opened = read_packet(
                &mut reply,
                protocol_id,
                0,
                Some(&s2c),
                AllowedPackets::NONE.with(PacketType::Challenge),
                None,
            );
            assert!(
                opened.is_ok(),
                "the challenge is not sealed with the token's key"
            );
            challenged.insert(from, Challenged { c2s, client_id });
            out.challenges += 1;
        }
        if after.clients_accepted > before.clients_accepted {
            assert_eq!(after.clients_accepted, before.clients_accepted + 1);
            let pending = challenged
                .get(&from)
                .expect("a session for an address that was never challenged");
            let mut copy = datagram.to_vec();
            let opened = read_packet(
                &mut copy,
                protocol_id,
                0,
                Some(&pending.c2s),
                AllowedPackets::NONE.with(PacketType::Response),
                None,
            );
            let Ok((
                _,
                Packet::Response {
                    token_sequence,
                    token_data,
                },
            )) = opened
            else {
                panic!("a session was created by {opened:?}");
            };
            let challenge =
                ChallengeToken::open(token_data, token_sequence, &Key::from_bytes(CHALLENGE_KEY))
                    .expect("a session was created by a challenge token that does not open");
            assert_eq!(challenge.client_id, pending.client_id);
            assert!(
                matches!(
                    events.as_slice(),
                    [ServerEvent::Connected { address, user_id, .. }]
                        if *address == from && *user_id == challenge.client_id
                ),
                "{events:?}"
            );
            out.sessions += 1;
        }
        let c = server.server_stats();
        assert!(server.connected_clients() <= server.max_clients());
        assert!(server.pending_handshakes() <= PENDING);
        assert!(server.remembered_tokens() <= 8 * PENDING);
        assert!(server.pending_handshakes() as u64 <= c.challenges_sent);
        assert!(server.connected_clients() as u64 <= c.clients_accepted);
        if c.challenges_sent + c.denials_sent + c.requests_dropped_busy == 0 {
            assert_eq!(
                (server.remembered_tokens(), server.pending_handshakes()),
                (0, 0),
                "state for requests whose token never opened"
            );
        }
    }
    let c = server.server_stats();
    assert_eq!(c.datagrams_received, handled);
    digest(&mut out.trace, format!("{c:?}").as_bytes());
    out
}

/// The client id and keys of a connection request whose token opens with
/// `private_key` and names this server.
fn open_request(datagram: &[u8], protocol_id: u64, private_key: &Key) -> Option<(u64, Key, Key)> {
    let mut copy = datagram.to_vec();
    let (_, packet) = read_packet(
        &mut copy,
        protocol_id,
        0,
        None,
        AllowedPackets::NONE.with(PacketType::Request),
        None,
    )
    .ok()?;
    let Packet::Request {
        expire_timestamp,
        nonce,
        private_data,
        ..
    } = packet
    else {
        return None;
    };
    // The request is in the clear: it re-encodes to the same bytes.
    let mut again = [0u8; MAX_DATAGRAM_BYTES];
    let key = Key::from_bytes([0; 32]);
    let len = write_packet(&packet, 0, &key, protocol_id, &mut again).ok()?;
    assert_eq!(&again[..len], datagram, "a request does not re-encode");
    let token = ConnectTokenPrivate::open(
        private_data,
        protocol_id,
        expire_timestamp,
        &nonce,
        private_key,
    )
    .ok()?;
    token
        .server_addresses
        .contains(&server_address())
        .then_some((
            token.client_id,
            token.client_to_server_key.clone(),
            token.server_to_client_key.clone(),
        ))
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` scripts of the unknown-address target, each one real handshake at
    /// time 0 from one of the 4 addresses (request, response, one payload), among
    /// noise that changes nothing: random bytes, the server's challenge sent back to
    /// it, the request again from another address, a request for another protocol.
    /// Each gets exactly one challenge, one session and one payload through (3).
    pub fn connection_unknown(count: usize, seed: u64) -> Vec<Seed> {
        /// Appends a datagram from `from` to the script and hands it to the mirror
        /// server (the target's twin: same keys, same times).
        fn send(script: &mut Vec<u8>, server: &mut Server<u32>, from: u32, d: &[u8]) {
            script.push(from as u8);
            push_blob(script, d);
            if let Some(delivery) = server.handle_datagram(Time::ZERO, from, d) {
                let _ = delivery.accept();
            }
        }
        let mut rng = Rng::new(seed);
        let mut backend = Backend::new(Key::from_bytes(PRIVATE_KEY), rng.next_u64());
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        (0..count)
            .map(|_| {
                let mut script = Vec::new();
                let config =
                    server_config(Key::from_bytes(PRIVATE_KEY), Key::from_bytes(CHALLENGE_KEY));
                let mut server: Server<u32> =
                    Server::new(config, Time::ZERO, UNIX_TIME).expect("server");
                let from = rng.below(4) as u32;
                let other = (from + 1 + rng.below(3) as u32) % 4;
                let token = backend.token(rng.next_u64());
                let mut client = netproto::connection::Client::new(
                    connection_config(),
                    &token,
                    SERVER,
                    Time::ZERO,
                )
                .expect("client");
                if rng.below(2) == 0 {
                    let mut junk = vec![0u8; rng.below(80) as usize];
                    rng.fill_bytes(&mut junk);
                    send(&mut script, &mut server, other, &junk);
                }
                client.update(Time::ZERO);
                let mut request = Vec::new();
                while let Some((_, len)) = client.poll_transmit(&mut buf) {
                    request = buf[..len].to_vec();
                    send(&mut script, &mut server, from, &request);
                }
                for _ in 0..3 {
                    while let Some((_, len)) = server.poll_transmit(&mut buf) {
                        let reply = buf[..len].to_vec();
                        if let Some(delivery) = client.handle_datagram(Time::ZERO, SERVER, &reply) {
                            let _ = delivery.accept();
                        }
                        if rng.below(4) == 0 {
                            send(&mut script, &mut server, from, &reply);
                        }
                    }
                    while let Some((_, len)) = client.poll_transmit(&mut buf) {
                        let d = buf[..len].to_vec();
                        send(&mut script, &mut server, from, &d);
                    }
                }
                assert!(client.is_connected(), "the seed's handshake failed");
                if rng.below(2) == 0 {
                    send(&mut script, &mut server, other, &request);
                }
                if rng.below(4) == 0 {
                    let mut wrong = request.clone();
                    wrong[14] ^= 1; // the protocol id
                    send(&mut script, &mut server, other, &wrong);
                }
                let mut payload = vec![0u8; 1 + rng.below(300) as usize];
                rng.fill_bytes(&mut payload);
                client.send(Time::ZERO, &payload).expect("connected");
                while let Some((_, len)) = client.poll_transmit(&mut buf) {
                    let d = buf[..len].to_vec();
                    send(&mut script, &mut server, from, &d);
                }
                if rng.below(2) == 0 {
                    script.push(0xFF);
                    client.update(Time::from_secs_f64(1.0));
                    while let Some((_, len)) = client.poll_transmit(&mut buf) {
                        let d = buf[..len].to_vec();
                        script.push(from as u8);
                        push_blob(&mut script, &d);
                    }
                }
                Seed::taking(script, 3)
            })
            .collect()
    }
}
