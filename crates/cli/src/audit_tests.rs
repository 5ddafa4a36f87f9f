//! `fairdeal audit` against exports built here the way the platform writes them: a match
//! played by the rules engine's bots, dealt from committed seeds, recorded as the tables,
//! commitment, dealing, rating (and chat) services record it, sealed into hash-chained
//! envelopes, put in an RFC 9162 tree with a signed checkpoint. Then one thing at a time is
//! tampered with, and each time the audit must fail naming the right check and line.
//!
//! Exports of both formats: format 1 (every leaf the envelope, every event shown; the tests
//! before the `format 2` section) and format 2 (leaves of salted commitments, content
//! disclosed line by line, and leaves written in format 1 before the switch).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use fairdeal_drand::{Schedule, TestChain};
use fairdeal_event::{
    Envelope, GENESIS_PREV_HASH, NewEvent, StreamId, body_bytes, compute_hash, seal,
};
use fairdeal_fairness::Deck;
use fairdeal_fairness::client_seed::{contributions_hash, table_client_seed};
use fairdeal_fairness::commitment::Commitment;
use fairdeal_fairness::deal::Deal;
use fairdeal_games::sim::{MatchSetup, play_match};
use fairdeal_games::{Bid, Event, HeuristicBot, MatchEnd, Seat, Suit, TableOptions};
use fairdeal_proto::fairdeal::chat::v1 as chpb;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating::{KFactor, Rating, TeamOutcome, four_seats};
use fairdeal_tlog::entry::Salt;
use fairdeal_tlog::export::v1::{EventLine, Line};
use fairdeal_tlog::export::{
    Consistency, Content, Disclosure, EventLine as EventLine2, FORMAT, FORMAT_V1, Header,
    LeafFormat, Line as Line2, decode_bytes, encode_bytes, encode_hashes,
};
use fairdeal_tlog::{Checkpoint, Entry, NoteSigner, NoteVerifier, Tree, leaf_hash};
use prost::{Message, Name};
use uuid::Uuid;

use super::{NamedLine, Report, audit, audit_with_chain};

const SEED: &str = "3f1c9a7e5b2d8c4a6e0f1b3d5c7a9e2f4b6d8a0c2e4f6a8b0d2c4e6f8a0b2c4d";
const ORIGIN: &str = "ledger.fairdeal.test";

/// The log every test starts from.
struct Log {
    /// Every envelope, in leaf order (the game's and some others').
    leaves: Vec<Envelope>,
    /// Stream heads.
    heads: BTreeMap<String, (u64, [u8; 32])>,
}

impl Log {
    fn new() -> Self {
        Self {
            leaves: Vec::new(),
            heads: BTreeMap::new(),
        }
    }

    fn append<M: Message + Name>(&mut self, stream: &str, correlation: &str, message: &M) {
        let (version, prev) = self
            .heads
            .get(stream)
            .copied()
            .unwrap_or((0, GENESIS_PREV_HASH));
        let event = NewEvent::from_message(message).with_correlation_id(correlation);
        let sealed = seal(&StreamId::parse(stream).unwrap(), version + 1, &prev, event).unwrap();
        self.heads
            .insert(stream.to_owned(), (version + 1, sealed.hash));
        self.leaves.push(sealed.to_envelope());
    }
}

fn players() -> [String; 4] {
    [1u128, 2, 3, 4].map(|n| Uuid::from_u128(0xa000 + n).to_string())
}

fn bid(b: Bid) -> tpb::Bid {
    tpb::Bid {
        kind: Some(match b {
            Bid::Points(n) => tpb::bid::Kind::Points(u32::from(n)),
            Bid::Game => tpb::bid::Kind::Game(true),
        }),
    }
}

fn suit(s: Suit) -> i32 {
    (match s {
        Suit::Spades => tpb::Suit::Spades,
        Suit::Hearts => tpb::Suit::Hearts,
        Suit::Diamonds => tpb::Suit::Diamonds,
        Suit::Clubs => tpb::Suit::Clubs,
    }) as i32
}

fn seat(s: Seat) -> u32 {
    u32::from(s.number())
}

/// A played match recorded by every service, plus the ledger's export of it.
struct Game {
    table_id: String,
    signer: NoteSigner,
    log: Log,
}

fn record_game() -> Game {
    record(false)
}

/// A chat line of the table's channel, correlated to the table as the chat service does;
/// its event id (the message id).
fn chat(log: &mut Log, t: &str, author: &str) -> String {
    log.append(
        &format!("chat-table-{t}"),
        t,
        &chpb::MessagePosted {
            channel: format!("table-{t}"),
            author_id: author.into(),
            ..Default::default()
        },
    );
    log.leaves
        .last()
        .map(|e| e.event_id.clone())
        .unwrap_or_default()
}

/// The game; with `with_chat`, four lines on the table's chat channel too (versions 1 and
/// 2 while the players sit down, then a moderator's removal of version 2 and a last line
/// once the game finished).
fn record(with_chat: bool) -> Game {
    record_with(with_chat, None)
}

/// The game; with `drand`, its commitment fixes a round of that chain (5 rounds after the
/// commitment's time, fallback 3 later), bound with its signature before the client seed is
/// fixed, its randomness the delayed value.
fn record_with(with_chat: bool, drand: Option<&TestChain>) -> Game {
    let table_id = Uuid::from_u128(0x0190_b6a2_7c1e_7d4a_9f0b_2c5d_8e9f_1a2b).to_string();
    let t = table_id.as_str();
    let players = players();
    let table = format!("table-{t}");
    let commit = format!("commitmenttable-{t}");
    let deals = format!("deals-{t}");
    let commitment = Commitment::of(SEED).to_hex();
    let contributions: BTreeMap<u32, String> =
        [(0, "alpha"), (1, "beta"), (2, "gamma"), (3, "delta")]
            .into_iter()
            .map(|(s, c)| (s, c.to_owned()))
            .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let drand = drand.map(|chain| {
        let round = chain.info().schedule.round_after(now, 5).unwrap();
        (chain.info().chain_hash(), round, chain.sign(round).unwrap())
    });
    let delayed = drand
        .as_ref()
        .map(|(_, _, beacon)| beacon.signature().randomness().to_hex());
    let client_seed = table_client_seed(&contributions, delayed.as_deref());
    let mut log = Log::new();
    // Another game's event first: the game's leaves do not start at 0.
    log.append("table-other", "other", &tpb::SeatLeft::default());
    // A rating of player 0 from an earlier game: this game's is version 2 of that stream.
    log.append(
        &format!("rating-{}", players[0]),
        "earlier-game",
        &rpb::RatingChanged::default(),
    );
    log.append(
        &commit,
        t,
        &cpb::TableCommitmentPublished {
            table_id: t.into(),
            seed_id: "seed-1".into(),
            commitment: commitment.clone(),
            delayed_source: drand
                .as_ref()
                .map(|(_, round, _)| format!("drand test round {round}"))
                .unwrap_or_default(),
            drand_round: drand.as_ref().map_or(0, |(_, round, _)| *round),
            drand_fallback_round: drand.as_ref().map_or(0, |(_, round, _)| round + 3),
            drand_chain_hash: drand
                .as_ref()
                .map(|(hash, _, _)| hex::encode(hash))
                .unwrap_or_default(),
            ..Default::default()
        },
    );
    let options = tpb::TableOptions {
        deck: tpb::Deck::Dix as i32,
        ..Default::default()
    };
    log.append(
        &table,
        t,
        &tpb::TableCreated {
            table_id: t.into(),
            creator_id: players[0].clone(),
            options: Some(options),
            bot_seats: vec![],
            move_seconds: 30,
            commitment: commitment.clone(),
            short_code: commitment[..5].into(),
            first_dealer: 0,
            latest_end_ms: 0,
        },
    );
    for (s, p) in players.iter().enumerate() {
        let s = s as u32;
        log.append(
            &table,
            t,
            &tpb::SeatTaken {
                table_id: t.into(),
                seat: s,
                player_id: p.clone(),
            },
        );
        let contribution = contributions[&s].clone();
        log.append(
            &commit,
            t,
            &cpb::SeedContributed {
                table_id: t.into(),
                seat: s,
                player_id: p.clone(),
                contribution: contribution.clone(),
            },
        );
        log.append(
            &table,
            t,
            &tpb::SeedContributed {
                table_id: t.into(),
                seat: s,
                player_id: p.clone(),
                contribution,
            },
        );
    }
    let removed = with_chat.then(|| {
        chat(&mut log, t, &players[0]);
        chat(&mut log, t, &players[1])
    });
    if let Some((_, round, beacon)) = &drand {
        let randomness = beacon.signature().randomness().to_hex();
        log.append(
            &commit,
            t,
            &cpb::DelayedValueBound {
                subject_id: t.into(),
                value: randomness.clone(),
                drand_round: *round,
                drand_signature: beacon.signature().to_hex(),
                drand_randomness: randomness,
            },
        );
    }
    log.append(
        &commit,
        t,
        &cpb::ClientSeedFixed {
            table_id: t.into(),
            client_seed: client_seed.clone(),
            contributions_hash: contributions_hash(&contributions),
        },
    );

    let bots = [1, 2, 3, 4].map(HeuristicBot::new);
    let played = play_match(
        &MatchSetup {
            options: TableOptions::default(),
            first_dealer: Seat::new(0).unwrap(),
            server_seed: SEED.into(),
            client_seed: client_seed.clone(),
            max_hands: 200,
        },
        [&bots[0], &bots[1], &bots[2], &bots[3]],
    )
    .unwrap();
    assert!(played.finished());
    let mut hands_played = 0;
    for event in &played.events {
        match event {
            Event::MatchStarted { first_dealer, .. } => log.append(
                &table,
                t,
                &tpb::MatchStarted {
                    table_id: t.into(),
                    options: Some(options),
                    first_dealer: seat(*first_dealer),
                },
            ),
            Event::HandStarted {
                hand,
                dealer,
                hands,
            } => {
                let salt = hand.to_string();
                log.append(
                    &table,
                    t,
                    &tpb::HandStarted {
                        table_id: t.into(),
                        hand: *hand,
                        dealer: seat(*dealer),
                        salt: salt.clone(),
                        commitment: commitment.clone(),
                        client_seed: client_seed.clone(),
                    },
                );
                for (position, cards) in hands.iter().enumerate() {
                    log.append(
                        &table,
                        t,
                        &tpb::CardsDealt {
                            table_id: t.into(),
                            hand: *hand,
                            seat: seat(dealer.offset(1 + position)),
                            position: position as u32,
                            cards: cards.iter().map(ToString::to_string).collect(),
                        },
                    );
                }
                let deal = Deal::from_seeds(Deck::Dix, SEED, &client_seed, &salt);
                log.append(
                    &deals,
                    t,
                    &dpb::HandDealt {
                        table_id: t.into(),
                        hand: u64::from(*hand),
                        deck: "dix".into(),
                        salt: salt.clone(),
                        commitment: commitment.clone(),
                        client_seed: client_seed.clone(),
                        distribution_number: deal.distribution_number().to_string(),
                        rejected_candidates: 0,
                        candidate_salt: salt,
                    },
                );
            }
            Event::BidPlaced { seat: s, bid: b } => log.append(
                &table,
                t,
                &tpb::BidPlaced {
                    table_id: t.into(),
                    seat: seat(*s),
                    bid: Some(bid(*b)),
                    command: None,
                },
            ),
            Event::PlayerPassed { seat: s } => log.append(
                &table,
                t,
                &tpb::PlayerPassed {
                    table_id: t.into(),
                    seat: seat(*s),
                    command: None,
                },
            ),
            Event::AuctionWon { seat: s, bid: b } => log.append(
                &table,
                t,
                &tpb::AuctionWon {
                    table_id: t.into(),
                    seat: seat(*s),
                    bid: Some(bid(*b)),
                },
            ),
            Event::TrumpNamed { seat: s, suit: su } => log.append(
                &table,
                t,
                &tpb::TrumpNamed {
                    table_id: t.into(),
                    seat: seat(*s),
                    suit: suit(*su),
                    command: None,
                },
            ),
            Event::CardPlayed { seat: s, card } => {
                // A turn clock between moves, as the service records one for players.
                log.append(
                    &table,
                    t,
                    &tpb::TurnClock {
                        table_id: t.into(),
                        seat: seat(*s),
                        deadline_ms: 1,
                    },
                );
                log.append(
                    &table,
                    t,
                    &tpb::CardPlayed {
                        table_id: t.into(),
                        seat: seat(*s),
                        card: card.to_string(),
                        command: None,
                    },
                );
            }
            Event::TrickWon {
                seat: s,
                trick,
                points,
            } => log.append(
                &table,
                t,
                &tpb::TrickWon {
                    table_id: t.into(),
                    seat: seat(*s),
                    trick: u32::from(*trick),
                    points: u32::from(*points),
                },
            ),
            Event::HandScored(h) => {
                hands_played += 1;
                log.append(
                    &table,
                    t,
                    &tpb::HandScored {
                        table_id: t.into(),
                        hand: h.hand,
                        declarer: seat(h.declarer),
                        bid: Some(bid(h.bid)),
                        card_points: h.card_points.to_vec(),
                        ace_transfers: h.ace_transfers.to_vec(),
                        contract_made: h.contract_made,
                        deltas: h.deltas.to_vec(),
                        scores: h.scores.to_vec(),
                    },
                );
            }
            Event::MatchWon {
                team,
                reason,
                scores,
            } => log.append(
                &table,
                t,
                &tpb::MatchWon {
                    table_id: t.into(),
                    team: u32::from(team.index() as u8),
                    reason: (match reason {
                        MatchEnd::TargetReached => tpb::MatchEnd::TargetReached,
                        MatchEnd::BothReachedDeclarerWins => tpb::MatchEnd::BothReachedDeclarerWins,
                        MatchEnd::GameBidMade => tpb::MatchEnd::GameBidMade,
                        MatchEnd::GameBidFailed => tpb::MatchEnd::GameBidFailed,
                    }) as i32,
                    scores: scores.to_vec(),
                },
            ),
        }
    }
    let (winner, _) = played.game.result().unwrap();
    let winner = winner.index() as u32;
    log.append(
        &table,
        t,
        &tpb::GameFinished {
            table_id: t.into(),
            players: (0..4)
                .map(|s| tpb::SeatPlayer {
                    seat: s,
                    player_id: players[s as usize].clone(),
                    bot: false,
                    abandoned: false,
                })
                .collect(),
            teams: vec![
                tpb::TeamSeats {
                    team: 0,
                    seats: vec![0, 2],
                },
                tpb::TeamSeats {
                    team: 1,
                    seats: vec![1, 3],
                },
            ],
            final_scores: played.game.scores().to_vec(),
            winner,
            variant: Some(options),
            hands_played,
            reason: tpb::FinishReason::Completed as i32,
        },
    );
    if let Some(removed) = removed {
        log.append(
            &format!("chat-table-{t}"),
            t,
            &chpb::MessageRemoved {
                channel: format!("table-{t}"),
                message_id: removed,
                moderator_id: players[3].clone(),
                reason: "spam".into(),
            },
        );
        chat(&mut log, t, &players[2]);
    }
    log.append(
        &commit,
        t,
        &cpb::TableSeedRevealed {
            table_id: t.into(),
            server_seed: SEED.into(),
            commitment: commitment.clone(),
            ..Default::default()
        },
    );
    log.append(
        &table,
        t,
        &tpb::TableSeedRevealed {
            table_id: t.into(),
            commitment: commitment.clone(),
            server_seed: SEED.into(),
            client_seed: client_seed.clone(),
        },
    );
    // Ratings, as crates/rating computes them (SPEC 6).
    let before = [1500.0, 1523.5, 1480.25, 1611.0];
    let outcome = if winner == 0 {
        TeamOutcome::FirstWon
    } else {
        TeamOutcome::SecondWon
    };
    let changes = four_seats(
        before.map(|r| Rating::new(r).unwrap()),
        outcome,
        KFactor::new(32.0).unwrap(),
    )
    .unwrap();
    for (s, change) in changes.iter().enumerate() {
        let opponents = [(s + 1) % 4, (s + 3) % 4];
        let weights = change.weights();
        log.append(
            &format!("rating-{}", players[s]),
            t,
            &rpb::RatingChanged {
                player_id: players[s].clone(),
                table_id: t.into(),
                game_kind: "jeu-du-10/dix".into(),
                rating_before: change.before().value(),
                rating_after: change.after().value(),
                expectation: change.expectation(),
                score: change.score().value(),
                k: 32.0,
                opponents: opponents
                    .iter()
                    .zip(weights)
                    .map(|(&o, weight)| rpb::Opponent {
                        player_id: players[o].clone(),
                        rating_before: before[o],
                        weight,
                    })
                    .collect(),
                games_played: if s == 0 { 2 } else { 1 },
                abandoned: false,
                seat: u32::try_from(s).unwrap(),
            },
        );
    }
    log.append("table-other", "other", &tpb::SeatLeft::default());
    Game {
        table_id,
        signer: NoteSigner::from_seed(ORIGIN, &[7; 32]).unwrap(),
        log,
    }
}

impl Game {
    fn tree(&self, size: usize) -> Tree {
        let mut tree = Tree::new();
        for env in &self.log.leaves[..size] {
            tree.push_leaf(&env.encode_to_vec());
        }
        tree
    }

    fn checkpoint(&self, size: usize) -> String {
        let tree = self.tree(size);
        Checkpoint::new(ORIGIN, tree.size(), tree.root())
            .unwrap()
            .sign(&self.signer)
    }

    /// Whether the table's export holds `env`: the events of its own streams and those
    /// correlated with it.
    fn is_own(&self, env: &Envelope) -> bool {
        let t = &self.table_id;
        env.correlation_id == *t
            || [
                format!("table-{t}"),
                format!("commitmenttable-{t}"),
                format!("deals-{t}"),
            ]
            .contains(&env.stream_id)
    }

    /// The export, as the ledger writes it, with consistency proofs from `previous`.
    fn export(&self, previous: &[u64]) -> Vec<Line> {
        let tree = self.tree(self.log.leaves.len());
        let mut lines = vec![Line::Header(Header {
            format: FORMAT_V1.into(),
            table_id: self.table_id.clone(),
            checkpoint: self.checkpoint(self.log.leaves.len()),
            server_seed: SEED.into(),
        })];
        for &old in previous {
            lines.push(Line::Consistency(Consistency {
                old_size: old,
                proof: encode_hashes(&tree.consistency_proof(old, tree.size()).unwrap()),
            }));
        }
        for (i, env) in self.log.leaves.iter().enumerate() {
            if self.is_own(env) {
                lines.push(Line::Event(EventLine {
                    leaf_index: i as u64,
                    stream_id: env.stream_id.clone(),
                    version: env.stream_version,
                    event_type: env.event_type.clone(),
                    envelope: encode_bytes(&env.encode_to_vec()),
                    proof: encode_hashes(&tree.inclusion_proof(i as u64, tree.size()).unwrap()),
                }));
            }
        }
        lines
    }

    fn key(&self) -> NoteVerifier {
        self.signer.verifier()
    }
}

/// The export file of `lines` (of either format).
fn text<L: serde::Serialize>(lines: &[L]) -> String {
    lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect()
}

/// The audit of `lines` (of either format) against `game`'s key.
fn run<L: serde::Serialize>(game: &Game, lines: &[L]) -> Report {
    audit(&text(lines), &game.key(), None)
}

#[track_caller]
fn assert_clean(report: &Report) {
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
}

/// The checks every honest export of a game runs (format 2 adds its own).
const CHECKS: [&str; 10] = [
    "checkpoint",
    "inclusion",
    "chain",
    "commitment",
    "client_seed",
    "deal",
    "replay",
    "score",
    "result",
    "rating",
];

/// The audit ran each of `checks` at least once.
#[track_caller]
fn assert_checked(report: &Report, checks: &[&str]) {
    for check in checks {
        assert!(report.checks[check].checked > 0, "{check} was not checked");
    }
}

/// The audit fails `check` at file line `line` (1-based; 0: anywhere).
#[track_caller]
fn assert_fails(report: &Report, check: &str, line: usize) {
    assert!(
        report
            .failures
            .iter()
            .any(|f| f.check == check && (line == 0 || f.line == line)),
        "expected {check} to fail at line {line}; failures: {:#?}",
        report.failures
    );
}

/// The index (in `lines`) of the first event line of type `M` (and passing `pick`).
fn find<M: Message + Name + Default>(lines: &[Line], pick: impl Fn(&M) -> bool) -> usize {
    lines
        .iter()
        .position(|l| match l {
            Line::Event(e) if e.event_type == M::full_name() => pick(&message::<M>(e)),
            _ => false,
        })
        .unwrap()
}

fn envelope(e: &EventLine) -> Envelope {
    Envelope::decode(decode_bytes(&e.envelope).unwrap().as_slice()).unwrap()
}

fn message<M: Message + Default>(e: &EventLine) -> M {
    M::decode(envelope(e).payload.as_slice()).unwrap()
}

fn event_mut(lines: &mut [Line], i: usize) -> &mut EventLine {
    match &mut lines[i] {
        Line::Event(e) => e,
        _ => panic!("line {} is not an event", i + 1),
    }
}

/// Replaces event line `i`'s payload by `edit` of it. With `reseal`, the attacker also
/// recomputes the hash chain of the stream from there on (so only the proofs and the
/// game's own checks can catch it).
fn tamper<M: Message + Default>(
    lines: &mut [Line],
    i: usize,
    reseal: bool,
    edit: impl FnOnce(&mut M),
) {
    let e = event_mut(lines, i);
    let mut env = envelope(e);
    let mut m: M = M::decode(env.payload.as_slice()).unwrap();
    edit(&mut m);
    env.payload = m.encode_to_vec();
    if reseal {
        env.hash = compute_hash(&env).to_vec();
    }
    let stream = env.stream_id.clone();
    let mut prev = env.hash.clone();
    e.envelope = encode_bytes(&env.encode_to_vec());
    if reseal {
        for line in lines.iter_mut().skip(i + 1) {
            if let Line::Event(e) = line
                && e.stream_id == stream
            {
                let mut env = envelope(e);
                env.prev_hash = prev;
                env.hash = compute_hash(&env).to_vec();
                prev = env.hash.clone();
                e.envelope = encode_bytes(&env.encode_to_vec());
            }
        }
    }
}

#[test]
fn an_honest_export_passes_every_check() {
    let game = record_game();
    let lines = game.export(&[]);
    let report = run(&game, &lines);
    assert_clean(&report);
    assert!(report.hands >= 2 && report.moves > 40, "{report:?}");
    assert_eq!(report.ratings, 4);
    assert_eq!(report.streams, 3 + 4);
    assert_checked(&report, &CHECKS);
    // The rating stream of player 0 is exported from version 2: a partial stream passes.
    assert_eq!(report.events as usize, lines.len() - 1);
}

/// A test chain (not drand) whose rounds are one second apart since 100 s ago.
fn test_chain() -> TestChain {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    TestChain::from_seed(&[11; 32], Schedule::new(now - 100, 1).unwrap()).unwrap()
}

#[test]
fn a_drand_tables_export_passes_against_its_chain_and_fails_against_another() {
    let chain = test_chain();
    let game = record_with(false, Some(&chain));
    let lines = game.export(&[]);
    let report = audit_with_chain(&text(&lines), &game.key(), None, &chain.chain().unwrap());
    assert_clean(&report);
    assert_checked(&report, &CHECKS);
    assert_checked(
        &report,
        &[
            "drand_chain",
            "drand_round",
            "drand_signature",
            "drand_randomness",
        ],
    );
    // The default chain, quicknet: the table's chain and signature are not quicknet's.
    let report = run(&game, &lines);
    let bound = find::<cpb::DelayedValueBound>(&lines, |_| true) + 1;
    let published = find::<cpb::TableCommitmentPublished>(&lines, |_| true) + 1;
    assert_fails(&report, "drand_chain", published);
    assert_fails(&report, "drand_signature", bound);
    // Another test chain: the signature is refused.
    let other = TestChain::from_seed(&[12; 32], chain.info().schedule).unwrap();
    let report = audit_with_chain(&text(&lines), &game.key(), None, &other.chain().unwrap());
    assert_fails(&report, "drand_signature", bound);
    // A changed randomness, resealed: the drand check names it, and the client seed differs.
    let mut changed = lines.clone();
    tamper::<cpb::DelayedValueBound>(&mut changed, bound - 1, true, |m| {
        m.drand_randomness = "ab".repeat(32);
        m.value = m.drand_randomness.clone();
    });
    let report = audit_with_chain(&text(&changed), &game.key(), None, &chain.chain().unwrap());
    assert_fails(&report, "drand_randomness", bound);
    assert_fails(&report, "client_seed", 0);
    // Without a drand round, no drand check runs.
    let plain = record_game();
    let report = run(&plain, &plain.export(&[]));
    assert_clean(&report);
    for check in [
        "drand_chain",
        "drand_round",
        "drand_signature",
        "drand_randomness",
    ] {
        assert_eq!(report.checks[check].checked, 0, "{check}");
    }
}

#[test]
fn the_export_extends_a_previous_checkpoint() {
    let game = record_game();
    let previous = game.checkpoint(40);
    let lines = game.export(&[40]);
    assert!(
        audit(&text(&lines), &game.key(), Some(&previous))
            .failures
            .is_empty()
    );
    // Without the proof, or with a previous checkpoint of another tree, it fails.
    let report = audit(&text(&game.export(&[])), &game.key(), Some(&previous));
    assert_fails(&report, "consistency", 1);
    let mut forged = Log::new();
    for _ in 0..40 {
        forged.append("table-forged", "x", &tpb::SeatLeft::default());
    }
    let mut tree = Tree::new();
    for env in &forged.leaves {
        tree.push_leaf(&env.encode_to_vec());
    }
    let other = Checkpoint::new(ORIGIN, 40, tree.root())
        .unwrap()
        .sign(&game.signer);
    let report = audit(&text(&lines), &game.key(), Some(&other));
    assert_fails(&report, "consistency", 2);
}

#[test]
fn a_wrong_key_or_a_changed_checkpoint_fails_the_signature() {
    let game = record_game();
    let lines = game.export(&[]);
    let stranger = NoteSigner::from_seed(ORIGIN, &[8; 32]).unwrap().verifier();
    assert_fails(&audit(&text(&lines), &stranger, None), "checkpoint", 1);
    let mut changed = lines.clone();
    if let Line::Header(h) = &mut changed[0] {
        // One character of the root hash line.
        let root_line = h.checkpoint.lines().nth(2).unwrap().to_owned();
        let mut flipped = root_line.clone().into_bytes();
        flipped[3] = if flipped[3] == b'A' { b'B' } else { b'A' };
        h.checkpoint = h
            .checkpoint
            .replacen(&root_line, &String::from_utf8(flipped).unwrap(), 1);
    }
    let report = run(&game, &changed);
    assert_fails(&report, "checkpoint", 1);
    // The proofs are checked against the (unverified) changed root too, and fail.
    assert_fails(&report, "inclusion", 0);
}

#[test]
fn a_changed_payload_fails_the_chain_and_its_proof() {
    let game = record_game();
    let mut lines = game.export(&[]);
    let i = find::<tpb::SeatTaken>(&lines, |m| m.seat == 2);
    tamper::<tpb::SeatTaken>(&mut lines, i, false, |m| {
        m.player_id.replace_range(0..1, "f")
    });
    let report = run(&game, &lines);
    assert_fails(&report, "chain", i + 1);
    assert_fails(&report, "inclusion", i + 1);
}

#[test]
fn a_changed_version_or_hash_fails() {
    let game = record_game();
    let lines = game.export(&[]);
    let i = find::<tpb::MatchStarted>(&lines, |_| true);
    // The line's readable version.
    let mut readable = lines.clone();
    event_mut(&mut readable, i).version += 1;
    assert_fails(&run(&game, &readable), "envelope", i + 1);
    // The envelope's version.
    let mut inner = lines.clone();
    let e = event_mut(&mut inner, i);
    let mut env = envelope(e);
    env.stream_version += 1;
    e.envelope = encode_bytes(&env.encode_to_vec());
    let report = run(&game, &inner);
    assert_fails(&report, "chain", i + 1);
    assert_fails(&report, "inclusion", i + 1);
    // One byte of the hash.
    let mut hashed = lines.clone();
    let e = event_mut(&mut hashed, i);
    let mut env = envelope(e);
    env.hash[5] ^= 1;
    e.envelope = encode_bytes(&env.encode_to_vec());
    let report = run(&game, &hashed);
    assert_fails(&report, "chain", i + 1);
    assert_fails(&report, "inclusion", i + 1);
}

#[test]
fn a_changed_proof_node_fails_inclusion() {
    let game = record_game();
    let mut lines = game.export(&[]);
    let i = find::<tpb::TrickWon>(&lines, |_| true);
    let e = event_mut(&mut lines, i);
    let mut node = decode_bytes(&e.proof[1]).unwrap();
    node[0] ^= 0x80;
    e.proof[1] = encode_bytes(&node);
    let report = run(&game, &lines);
    assert_fails(&report, "inclusion", i + 1);
    assert_eq!(report.failures.len(), 1, "{:#?}", report.failures);
}

#[test]
fn a_changed_seed_fails_the_commitment() {
    let game = record_game();
    let mut lines = game.export(&[]);
    if let Line::Header(h) = &mut lines[0] {
        h.server_seed.replace_range(0..1, "4");
    }
    let report = run(&game, &lines);
    assert_fails(&report, "commitment", 0);
    // Every deal re-derived from the wrong seed differs too.
    assert_fails(&report, "deal", 0);
}

#[test]
fn a_changed_card_in_a_move_fails_the_replay_even_with_the_chain_resealed() {
    let game = record_game();
    let mut lines = game.export(&[]);
    // The first card played, swapped for a card another seat holds.
    let i = find::<tpb::CardPlayed>(&lines, |_| true);
    let played: tpb::CardPlayed = message(event_mut(&mut lines, i));
    let j = find::<tpb::CardsDealt>(&lines, |m| m.hand == 0 && m.seat != played.seat);
    let other: tpb::CardsDealt = message(event_mut(&mut lines, j));
    tamper::<tpb::CardPlayed>(&mut lines, i, true, |m| m.card = other.cards[0].clone());
    let report = run(&game, &lines);
    assert_fails(&report, "replay", i + 1);
    assert_fails(&report, "inclusion", i + 1);
    assert!(
        !report.failed("chain"),
        "the chain was resealed: {:#?}",
        report.failures
    );
}

#[test]
fn a_changed_deal_fails_the_deal_check() {
    let game = record_game();
    let mut lines = game.export(&[]);
    let i = find::<tpb::CardsDealt>(&lines, |m| m.hand == 1 && m.position == 2);
    tamper::<tpb::CardsDealt>(&mut lines, i, true, |m| m.cards.swap(0, 1));
    let report = run(&game, &lines);
    assert_fails(&report, "deal", i + 1);
}

#[test]
fn a_changed_score_fails_the_score_check() {
    let game = record_game();
    let mut lines = game.export(&[]);
    let i = find::<tpb::HandScored>(&lines, |_| true);
    tamper::<tpb::HandScored>(&mut lines, i, true, |m| m.scores[0] += 5);
    let report = run(&game, &lines);
    assert_fails(&report, "score", i + 1);
    // And the final result: its scores no longer follow.
    let mut lines = game.export(&[]);
    let i = find::<tpb::GameFinished>(&lines, |_| true);
    tamper::<tpb::GameFinished>(&mut lines, i, true, |m| m.final_scores[1] -= 10);
    assert_fails(&run(&game, &lines), "result", i + 1);
}

#[test]
fn a_changed_rating_fails_the_rating_check() {
    let game = record_game();
    let lines = game.export(&[]);
    let i = find::<rpb::RatingChanged>(&lines, |_| true);
    // One ulp of the new rating.
    let mut ulp = lines.clone();
    tamper::<rpb::RatingChanged>(&mut ulp, i, true, |m| {
        m.rating_after = f64::from_bits(m.rating_after.to_bits() + 1);
    });
    assert_fails(&run(&game, &ulp), "rating", i + 1);
    // A changed input (an opponent's rating before) is caught against their own record.
    let mut input = lines.clone();
    tamper::<rpb::RatingChanged>(&mut input, i, true, |m| m.opponents[0].rating_before += 1.0);
    assert_fails(&run(&game, &input), "rating", i + 1);
    // A loss recorded as a win.
    let mut score = lines;
    tamper::<rpb::RatingChanged>(&mut score, i, true, |m| m.score = 1.0 - m.score);
    assert_fails(&run(&game, &score), "rating", i + 1);
}

#[test]
fn a_dropped_or_reordered_line_fails() {
    let game = record_game();
    let lines = game.export(&[]);
    let i = find::<tpb::BidPlaced>(&lines, |_| true);
    let mut dropped = lines.clone();
    dropped.remove(i);
    let report = run(&game, &dropped);
    // The next event of the table stream no longer follows.
    assert_fails(&report, "chain", i + 1);
    let mut swapped = lines.clone();
    swapped.swap(i, i + 1);
    let report = run(&game, &swapped);
    assert_fails(&report, "order", i + 2);
    // Dropping the table stream's last event (its seed reveal) fails too.
    let mut last = lines;
    let j = find::<tpb::TableSeedRevealed>(&last, |_| true);
    last.remove(j);
    assert_fails(&run(&game, &last), "commitment", 0);
    // And a rating line: the player has no rating change any more.
    let mut rating = game.export(&[]);
    let k = find::<rpb::RatingChanged>(&rating, |_| true);
    rating.remove(k);
    assert_fails(&run(&game, &rating), "rating", 0);
}

#[test]
fn garbage_lines_are_named() {
    let game = record_game();
    let mut text = text(&game.export(&[]));
    text.push_str("{\"kind\":\"event\"}\nnot json\n");
    let report = audit(&text, &game.key(), None);
    let n = text.lines().count();
    assert_fails(&report, "format", n - 1);
    assert_fails(&report, "format", n);
}

// Format 2: leaves of salted commitments, content disclosed line by line.

/// Leaf `i`'s salts. The ledger draws them from the OS; fixed here so that a failure
/// reproduces.
fn salts(i: usize) -> (Salt, Salt) {
    let mut body = [0xb0; 32];
    body[..8].copy_from_slice(&(i as u64).to_be_bytes());
    let mut chain = body;
    chain[31] = 0xc0;
    (body, chain)
}

fn hash32(bytes: &[u8]) -> [u8; 32] {
    bytes.try_into().unwrap()
}

/// Everything but chat, which is personal: what the ledger's visibility rule discloses of a
/// finished game. The chat line of version `erased` is erased.
fn ledger_rule(erased: u64) -> impl Fn(&Envelope) -> Disclosure {
    move |env| {
        if !env.stream_id.starts_with("chat-") {
            Disclosure::Full
        } else if env.stream_version == erased {
            Disclosure::Erased
        } else {
            Disclosure::WithheldPersonal
        }
    }
}

fn all_full(_: &Envelope) -> Disclosure {
    Disclosure::Full
}

impl Game {
    /// Leaf `i` as a ledger that switched to format 2 at leaf `legacy` stores it.
    fn leaf_v2(&self, i: usize, legacy: usize) -> Vec<u8> {
        let env = &self.log.leaves[i];
        if i < legacy {
            return env.encode_to_vec();
        }
        let (body_salt, chain_salt) = salts(i);
        Entry::commit(
            &body_salt,
            &body_bytes(env),
            &chain_salt,
            &hash32(&env.prev_hash),
            &hash32(&env.hash),
        )
        .to_bytes()
        .to_vec()
    }

    /// The format 2 export, as the ledger writes it: leaves below `legacy` in format 1, each
    /// line disclosed as `rule` says.
    fn export_v2(&self, legacy: usize, rule: impl Fn(&Envelope) -> Disclosure) -> Vec<Line2> {
        let leaves: Vec<Vec<u8>> = (0..self.log.leaves.len())
            .map(|i| self.leaf_v2(i, legacy))
            .collect();
        let mut tree = Tree::new();
        for leaf in &leaves {
            tree.push_leaf(leaf);
        }
        let mut lines = vec![Line2::Header(Header {
            format: FORMAT.into(),
            table_id: self.table_id.clone(),
            checkpoint: Checkpoint::new(ORIGIN, tree.size(), tree.root())
                .unwrap()
                .sign(&self.signer),
            server_seed: SEED.into(),
        })];
        for (i, (env, leaf)) in self.log.leaves.iter().zip(leaves).enumerate() {
            if !self.is_own(env) {
                continue;
            }
            let (body_salt, chain_salt) = salts(i);
            let content = match (i < legacy, rule(env)) {
                (true, Disclosure::Full) => Content::V1Envelope { envelope: leaf },
                (true, disclosure) => Content::V1Sealed {
                    disclosure,
                    leaf_hash: leaf_hash(&leaf),
                },
                (false, Disclosure::Full) => Content::Full {
                    leaf,
                    envelope: env.encode_to_vec(),
                    body_salt,
                    chain_salt,
                },
                (false, Disclosure::Body) => Content::Body {
                    leaf,
                    body: body_bytes(env),
                    body_salt,
                },
                (false, disclosure) => Content::Sealed { disclosure, leaf },
            };
            lines.push(Line2::Event(EventLine2::new(
                i as u64,
                &tree.inclusion_proof(i as u64, tree.size()).unwrap(),
                env.stream_id.clone(),
                env.stream_version,
                env.event_type.clone(),
                &content,
            )));
        }
        lines
    }

    /// The leaf index of the first event of `stream` at `version`.
    fn leaf_of(&self, stream_prefix: &str, version: u64) -> usize {
        self.log
            .leaves
            .iter()
            .position(|e| e.stream_id.starts_with(stream_prefix) && e.stream_version == version)
            .unwrap()
    }
}

/// The index (in `lines`) of the first event line that `pick` picks.
fn find2(lines: &[Line2], pick: impl Fn(&EventLine2) -> bool) -> usize {
    lines
        .iter()
        .position(|l| matches!(l, Line2::Event(e) if pick(e)))
        .unwrap()
}

fn of_type<M: Name>(e: &EventLine2) -> bool {
    e.event_type == M::full_name()
}

fn chat_line(version: u64) -> impl Fn(&EventLine2) -> bool {
    move |e| e.stream_id.starts_with("chat-") && e.version == version
}

fn event2_mut(lines: &mut [Line2], i: usize) -> &mut EventLine2 {
    match &mut lines[i] {
        Line2::Event(e) => e,
        _ => panic!("line {} is not an event", i + 1),
    }
}

#[test]
fn a_format_2_export_passes_every_check() {
    let game = record_game();
    let lines = game.export_v2(0, all_full);
    let report = run(&game, &lines);
    assert_clean(&report);
    assert_eq!(report.events as usize, lines.len() - 1);
    assert_eq!(report.streams, 3 + 4);
    assert_eq!(report.ratings, 4);
    assert!(report.erased.is_empty() && report.withheld.is_empty());
    assert_checked(&report, &CHECKS);
    assert_checked(&report, &["opening", "disclosure", "envelope"]);
    // The same game from a ledger that switched to format 2 mid-game: the leaves before
    // are envelopes (leaf format 1), the file is format 2 all the same.
    let legacy = game.leaf_of("table-", 10);
    let mixed = game.export_v2(legacy, all_full);
    assert!(
        mixed
            .iter()
            .any(|l| matches!(l, Line2::Event(e) if e.leaf_format == LeafFormat::V1))
    );
    let report = run(&game, &mixed);
    assert_clean(&report);
    assert_eq!(report.events as usize, mixed.len() - 1);
}

#[test]
fn withheld_and_erased_chat_lines_pass_and_the_erased_are_named() {
    let game = record(true);
    // Chat version 1 is a leaf from before the switch, the rest format 2 leaves.
    for legacy in [game.leaf_of("chat-", 2), 0] {
        let lines = game.export_v2(legacy, ledger_rule(2));
        let report = run(&game, &lines);
        assert_clean(&report);
        let erased = find2(&lines, chat_line(2));
        let chat_stream = format!("chat-table-{}", game.table_id);
        assert_eq!(
            report.erased,
            [NamedLine {
                line: erased + 1,
                stream_id: chat_stream.clone(),
                version: 2,
                event_type: chpb::MessagePosted::full_name(),
            }]
        );
        assert_eq!(
            report.withheld,
            BTreeMap::from([(Disclosure::WithheldPersonal.as_str(), 3)])
        );
        // Every line was proven; only the disclosed ones were audited as events.
        assert_eq!(report.checks["inclusion"].checked as usize, lines.len() - 1);
        assert_eq!(report.events as usize, lines.len() - 1 - 4);
        assert_eq!(report.streams, 3 + 4 + 1);
        // The summary `fairdeal audit` prints names the erased line as erased.
        let summary = serde_json::to_value(&report).unwrap();
        assert_eq!(
            summary["erased"],
            serde_json::json!([{
                "line": erased + 1,
                "stream_id": chat_stream,
                "version": 2,
                "event_type": "fairdeal.chat.v1.MessagePosted",
            }])
        );
        assert_eq!(summary["withheld"]["withheld_personal"], 3);
    }
}

#[test]
fn a_body_disclosure_opens_over_the_body() {
    let game = record(true);
    // Not what the ledger discloses of a finished game's chat, but a well-formed line: its
    // body opens and matches the line; its chain link stays sealed.
    let rule = |env: &Envelope| {
        if env.stream_id.starts_with("chat-") && env.stream_version == 4 {
            Disclosure::Body
        } else {
            ledger_rule(2)(env)
        }
    };
    let lines = game.export_v2(0, rule);
    let report = run(&game, &lines);
    assert_clean(&report);
    assert_eq!(report.withheld[Disclosure::Body.as_str()], 1);
    // A body with its chain link left in is not a body.
    let mut linked = lines.clone();
    let i = find2(&linked, chat_line(4));
    let env = game.log.leaves[leaf_index_at(&linked, i)].clone();
    let e = event2_mut(&mut linked, i);
    e.body = Some(encode_bytes(&env.encode_to_vec()));
    let report = run(&game, &linked);
    assert_fails(&report, "opening", i + 1);
}

/// The leaf index of event line `i`.
fn leaf_index_at(lines: &[Line2], i: usize) -> usize {
    match &lines[i] {
        Line2::Event(e) => e.leaf_index as usize,
        _ => panic!("line {} is not an event", i + 1),
    }
}

#[test]
fn a_game_record_line_not_disclosed_in_full_fails() {
    let game = record(true);
    let t = game.table_id.clone();
    type Pick = Box<dyn Fn(&Envelope) -> bool>;
    let cases: [(&str, Pick, Disclosure); 5] = [
        (
            "a hand withheld",
            Box::new(is_type::<tpb::CardsDealt>),
            Disclosure::WithheldGame,
        ),
        (
            "a deal erased",
            Box::new(is_type::<dpb::HandDealt>),
            Disclosure::Erased,
        ),
        (
            "a rating change withheld",
            Box::new(is_type::<rpb::RatingChanged>),
            Disclosure::WithheldPersonal,
        ),
        (
            "a move shown without its link",
            Box::new(is_type::<tpb::CardPlayed>),
            Disclosure::Body,
        ),
        (
            "a commitment line of unknown type",
            Box::new(move |e| {
                e.stream_id == format!("commitmenttable-{t}") && e.stream_version == 3
            }),
            Disclosure::WithheldUnknown,
        ),
    ];
    for (what, pick, disclosure) in cases {
        // Only the first event of the game `pick` picks is not disclosed.
        let first = game
            .log
            .leaves
            .iter()
            .position(|e| e.correlation_id == game.table_id && pick(e))
            .unwrap();
        let first_env = game.log.leaves[first].clone();
        let rule = |env: &Envelope| {
            if env.event_id == first_env.event_id {
                disclosure
            } else {
                ledger_rule(2)(env)
            }
        };
        for legacy in [0, first + 1] {
            let lines = game.export_v2(legacy, rule);
            let i = find2(&lines, |e| e.leaf_index == first as u64);
            let report = run(&game, &lines);
            assert_fails(&report, "disclosure", i + 1);
            // Its version still counts: the stream stays whole and the chain check passes.
            assert!(!report.failed("chain"), "{what}: {:#?}", report.failures);
            assert!(
                !report.failed("inclusion"),
                "{what}: {:#?}",
                report.failures
            );
        }
    }
}

fn is_type<M: Name>(e: &Envelope) -> bool {
    e.event_type == M::full_name()
}

/// Every single-field change of event line `i`: the field (and where), and the file.
fn mutations(lines: &[Line2], i: usize, fields: &[&str]) -> Vec<(String, String)> {
    use serde_json::{Map, Value};
    let texts: Vec<String> = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    let line: Map<String, Value> = serde_json::from_str(&texts[i]).unwrap();
    let flip = |text: &str, at: usize| -> String {
        let mut bytes = decode_bytes(text).unwrap();
        let at = at.min(bytes.len() - 1);
        bytes[at] ^= 0x01;
        encode_bytes(&bytes)
    };
    let mut out = Vec::new();
    for key in fields {
        let value = line
            .get(*key)
            .unwrap_or_else(|| panic!("no {key} in {}", texts[i]));
        let changes: Vec<(String, Value)> = match (*key, value) {
            ("kind", _) => vec![("to consistency".into(), Value::from("consistency"))],
            ("leaf_format", Value::Number(n)) => {
                vec![("other".into(), Value::from(3 - n.as_u64().unwrap()))]
            }
            (_, Value::Number(n)) => {
                let n = n.as_u64().unwrap();
                let mut v = vec![("+1".into(), Value::from(n + 1))];
                if n > 0 {
                    v.push(("-1".into(), Value::from(n - 1)));
                }
                v
            }
            ("disclosure", Value::String(d)) => {
                let other = if d == "full" {
                    "withheld_personal"
                } else {
                    "full"
                };
                vec![(other.into(), Value::from(other))]
            }
            ("stream_id" | "event_type", Value::String(s)) => {
                let mut changed = s.clone();
                let last = changed.pop().unwrap();
                changed.push(if last == '0' { '1' } else { '0' });
                vec![("last character".into(), Value::from(changed))]
            }
            ("proof", Value::Array(hashes)) => [0, hashes.len() - 1]
                .into_iter()
                .flat_map(|h| [0, 31].map(|at| (h, at)))
                .map(|(h, at)| {
                    let mut changed = hashes.clone();
                    changed[h] = Value::from(flip(hashes[h].as_str().unwrap(), at));
                    (format!("hash {h} byte {at}"), Value::Array(changed))
                })
                .collect(),
            (_, Value::String(b64)) => {
                let len = decode_bytes(b64).unwrap().len();
                [0, len / 2, len - 1]
                    .into_iter()
                    .map(|at| (format!("byte {at}"), Value::from(flip(b64, at))))
                    .collect()
            }
            other => panic!("{other:?}"),
        };
        for (how, changed) in changes {
            let mut edited = line.clone();
            edited.insert((*key).to_owned(), changed);
            let mut file = texts.clone();
            file[i] = serde_json::to_string(&edited).unwrap();
            out.push((format!("{key} ({how})"), file.join("\n") + "\n"));
        }
    }
    out
}

#[test]
fn every_field_of_a_format_2_line_is_bound() {
    let game = record(true);
    let legacy = game.leaf_of("chat-", 2);
    let rule = |env: &Envelope| {
        if env.stream_id.starts_with("chat-") && env.stream_version == 4 {
            Disclosure::Body
        } else {
            ledger_rule(3)(env)
        }
    };
    let lines = game.export_v2(legacy, rule);
    assert_clean(&run(&game, &lines));
    let disclosed = [
        "kind",
        "leaf_index",
        "leaf_format",
        "proof",
        "stream_id",
        "version",
        "event_type",
        "disclosure",
    ];
    // What a withheld or erased line says of itself beside its leaf is the ledger's word
    // (module doc of `audit`): its leaf, index, proof and shape are bound.
    let sealed = ["kind", "leaf_index", "leaf_format", "proof", "disclosure"];
    let with = |base: &[&'static str], extra: &[&'static str]| -> Vec<&'static str> {
        base.iter().chain(extra).copied().collect()
    };
    let cases = [
        (
            "a format 2 leaf in full",
            find2(&lines, of_type::<tpb::CardPlayed>),
            with(&disclosed, &["leaf", "envelope", "body_salt", "chain_salt"]),
        ),
        (
            "a format 1 leaf in full",
            find2(&lines, of_type::<cpb::TableCommitmentPublished>),
            with(&disclosed, &["envelope"]),
        ),
        (
            "a body",
            find2(&lines, chat_line(4)),
            with(&disclosed, &["leaf", "body", "body_salt"]),
        ),
        (
            "a withheld format 2 leaf",
            find2(&lines, chat_line(2)),
            with(&sealed, &["leaf"]),
        ),
        (
            "an erased format 2 leaf",
            find2(&lines, chat_line(3)),
            with(&sealed, &["leaf"]),
        ),
        (
            "a withheld format 1 leaf",
            find2(&lines, chat_line(1)),
            with(&sealed, &["leaf_hash"]),
        ),
    ];
    let mut tried = 0;
    for (what, i, fields) in cases {
        for (change, file) in mutations(&lines, i, &fields) {
            let report = audit(&file, &game.key(), None);
            assert!(
                report.failures.iter().any(|f| f.line == i + 1),
                "{what}, line {}: {change} passed: {:#?}",
                i + 1,
                report.failures
            );
            tried += 1;
        }
    }
    assert!(tried > 60, "{tried}");
    // A withheld line's readable fields are checked where they can be: moved into the
    // game's record it fails `disclosure`; a version out of order fails `chain`.
    let i = find2(&lines, chat_line(2));
    let mut moved = lines.clone();
    event2_mut(&mut moved, i).stream_id = format!("table-{}", game.table_id);
    assert_fails(&run(&game, &moved), "disclosure", i + 1);
    let j = find2(&lines, chat_line(3));
    let mut back = lines.clone();
    event2_mut(&mut back, j).version = 1;
    assert_fails(&run(&game, &back), "chain", j + 1);
}

#[test]
fn a_tampered_full_line_fails_the_right_check() {
    let game = record_game();
    let lines = game.export_v2(0, all_full);
    let i = find2(&lines, of_type::<tpb::BidPlaced>);
    let leaf = leaf_index_at(&lines, i);
    let env = game.log.leaves[leaf].clone();
    // Another payload, its hash resealed: the body commitment no longer opens.
    let mut payload = lines.clone();
    let mut changed = env.clone();
    changed.payload.push(0);
    changed.hash = compute_hash(&changed).to_vec();
    event2_mut(&mut payload, i).envelope = Some(encode_bytes(&changed.encode_to_vec()));
    let report = run(&game, &payload);
    assert_fails(&report, "opening", i + 1);
    assert!(!report.failed("inclusion"), "{:#?}", report.failures);
    // The same envelope with a field the protobuf does not know appended: it decodes to the
    // same event, but it is not the canonical encoding, so no byte escapes the commitments.
    let mut unknown = lines.clone();
    let mut bytes = env.encode_to_vec();
    bytes.extend_from_slice(&[0xf8, 0x01, 0x01]); // field 31, varint 1
    assert_eq!(Envelope::decode(bytes.as_slice()).unwrap(), env);
    event2_mut(&mut unknown, i).envelope = Some(encode_bytes(&bytes));
    assert_fails(&run(&game, &unknown), "opening", i + 1);
    // Another salt: the commitment does not open.
    let mut salt = lines.clone();
    event2_mut(&mut salt, i).chain_salt = Some(encode_bytes(&[0; 32]));
    assert_fails(&run(&game, &salt), "opening", i + 1);
    // A leaf that is not an entry is refused as one, and is not the proven leaf either.
    let mut leaf_line = lines.clone();
    let mut bytes = decode_bytes(event2_mut(&mut leaf_line, i).leaf.as_ref().unwrap()).unwrap();
    bytes[0] = 0x03;
    event2_mut(&mut leaf_line, i).leaf = Some(encode_bytes(&bytes));
    let report = run(&game, &leaf_line);
    assert_fails(&report, "opening", i + 1);
    assert_fails(&report, "inclusion", i + 1);
    // The game checks run on format 2 events as on format 1: a changed card, with its
    // chain, commitments and tree recomputed by the attacker, is still an illegal move.
    let mut forged = record_game();
    let k = forged
        .log
        .leaves
        .iter()
        .position(is_type::<tpb::CardPlayed>)
        .unwrap();
    let mut env = forged.log.leaves[k].clone();
    let mut played = tpb::CardPlayed::decode(env.payload.as_slice()).unwrap();
    // A card another seat holds.
    let other = forged
        .log
        .leaves
        .iter()
        .filter(|e| is_type::<tpb::CardsDealt>(e))
        .map(|e| tpb::CardsDealt::decode(e.payload.as_slice()).unwrap())
        .find(|d| d.hand == 0 && d.seat != played.seat)
        .unwrap();
    played.card = other.cards[0].clone();
    env.payload = played.encode_to_vec();
    env.hash = compute_hash(&env).to_vec();
    forged.log.leaves[k] = env;
    let mut prev = forged.log.leaves[k].hash.clone();
    let stream = forged.log.leaves[k].stream_id.clone();
    for e in forged.log.leaves.iter_mut().skip(k + 1) {
        if e.stream_id == stream {
            e.prev_hash = prev;
            e.hash = compute_hash(e).to_vec();
            prev = e.hash.clone();
        }
    }
    let lines = forged.export_v2(0, all_full);
    let report = run(&forged, &lines);
    assert_fails(
        &report,
        "replay",
        find2(&lines, |e| e.leaf_index == k as u64) + 1,
    );
    for check in ["inclusion", "opening", "chain", "envelope"] {
        assert!(!report.failed(check), "{check}: {:#?}", report.failures);
    }
}

#[test]
fn format_2_chat_streams_need_not_be_whole_and_link_where_they_can() {
    let game = record(true);
    // A chat line left out: not part of the game's record, so not required.
    let mut dropped = game.export_v2(0, ledger_rule(2));
    dropped.remove(find2(&dropped, chat_line(3)));
    assert_clean(&run(&game, &dropped));
    // A format 1 file keeps the old rule: every stream of the game's own is whole.
    let v1 = game.export(&[]);
    assert_clean(&run(&game, &v1));
    let mut v1_dropped = v1.clone();
    let k = v1_dropped
        .iter()
        .position(
            |l| matches!(l, Line::Event(e) if e.stream_id.starts_with("chat-") && e.version == 3),
        )
        .unwrap();
    v1_dropped.remove(k);
    assert_fails(&run(&game, &v1_dropped), "chain", k + 1);
    // Chat disclosed in full (as a reader with the right to it would see it) around an
    // erased line: versions 3 and 4 follow each other and must link; 1 and 3 cannot.
    let mut broken = record(true);
    let v4 = broken.leaf_of("chat-", 4);
    let env = &mut broken.log.leaves[v4];
    env.prev_hash = vec![9; 32];
    env.hash = compute_hash(env).to_vec();
    let erase = |version: u64| {
        move |env: &Envelope| {
            if env.stream_id.starts_with("chat-") && env.stream_version == version {
                Disclosure::Erased
            } else {
                Disclosure::Full
            }
        }
    };
    let lines = broken.export_v2(0, erase(2));
    let report = run(&broken, &lines);
    assert_fails(&report, "chain", find2(&lines, chat_line(4)) + 1);
    assert_eq!(report.failures.len(), 1, "{:#?}", report.failures);
    // With version 3 erased, version 4's link cannot be checked and nothing fails.
    assert_clean(&run(&broken, &broken.export_v2(0, erase(3))));
}

#[test]
fn each_format_is_read_as_its_header_says() {
    let game = record_game();
    // Format 1 lines under a format 2 header, and the other way round.
    let mut v1 = game.export(&[]);
    if let Line::Header(h) = &mut v1[0] {
        h.format = FORMAT.into();
    }
    let report = run(&game, &v1);
    assert_fails(&report, "format", 2);
    assert_eq!(report.events, 0);
    let mut v2 = game.export_v2(0, all_full);
    if let Line2::Header(h) = &mut v2[0] {
        h.format = FORMAT_V1.into();
    }
    let report = run(&game, &v2);
    assert_fails(&report, "format", 2);
    assert_eq!(report.events, 0);
    // A format no reader knows.
    let mut unknown = game.export_v2(0, all_full);
    if let Line2::Header(h) = &mut unknown[0] {
        h.format = "fairdeal-game-export/3".into();
    }
    assert_fails(&run(&game, &unknown), "format", 1);
}

/// Audit speed beside the hash-chain bound: one full match's export audited `ROUNDS` times,
/// in format 1 and in format 2 (every line in full: each also opens two commitments), and
/// SHA-256 over the same envelope bytes (the least any chain check must do).
/// `cargo test --release -p fairdeal-cli --lib audit_rate -- --ignored --nocapture`
#[test]
#[ignore = "benchmark; run by hand"]
#[allow(clippy::print_stdout)]
fn audit_rate() {
    use sha2::{Digest, Sha256};
    use std::time::Instant;
    const ROUNDS: u32 = 20;
    let game = record_game();
    let lines = game.export(&[]);
    let key = game.key();
    let envelopes: Vec<Vec<u8>> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Event(e) => Some(decode_bytes(&e.envelope).unwrap()),
            _ => None,
        })
        .collect();
    let events = envelopes.len() as f64 * f64::from(ROUNDS);
    let started = Instant::now();
    let mut sink = 0u8;
    for _ in 0..ROUNDS {
        for e in &envelopes {
            sink ^= Sha256::digest(e)[0];
        }
    }
    let sha_s = started.elapsed().as_secs_f64();
    let bytes: usize = envelopes.iter().map(Vec::len).sum();
    for (format, text) in [
        ("format 1", text(&lines)),
        ("format 2", text(&game.export_v2(0, all_full))),
    ] {
        let started = Instant::now();
        for _ in 0..ROUNDS {
            let report = audit(&text, &key, None);
            assert!(report.failures.is_empty());
        }
        let audit_s = started.elapsed().as_secs_f64();
        println!(
            "{format} export of {} events ({} envelope bytes, {} text bytes), {ROUNDS} rounds: \
             audit {:.0} events/s; SHA-256 over the same envelopes {:.0} events/s ({sink})",
            envelopes.len(),
            bytes,
            text.len(),
            events / audit_s,
            events / sha_s
        );
    }
}

/// Writes the fixture's exports and its log key to the directory `$FAIRDEAL_AUDIT_SAMPLE`,
/// for timing the release `fairdeal audit` binary on them (docs/performance.md): `game.ndjson`
/// in format 1, `game-v2.ndjson` in format 2 with the table's chat withheld and one line of it
/// erased.
#[test]
#[ignore = "writes files; run by hand"]
fn write_sample_export() {
    let dir = std::env::var("FAIRDEAL_AUDIT_SAMPLE").expect("FAIRDEAL_AUDIT_SAMPLE");
    let dir = std::path::Path::new(&dir);
    let game = record_game();
    std::fs::write(dir.join("game.ndjson"), text(&game.export(&[]))).unwrap();
    std::fs::write(dir.join("log.key"), game.key().to_string()).unwrap();
    let chatty = record(true);
    std::fs::write(
        dir.join("game-v2.ndjson"),
        text(&chatty.export_v2(0, ledger_rule(2))),
    )
    .unwrap();
}

/// The ratings check of a French Tarot game: the `RatingChanged` of every seat as the rating
/// service records them (crates/rating's `each_alone` from the final scores), read as
/// decoded events of the export.
mod tarot_ratings {
    use fairdeal_rating::{DEFAULT_K, Placing, each_alone};
    use fairdeal_tlog::export::Header;

    use super::super::{Ev, GameAudit};
    use super::*;

    const SCORES: [i32; 4] = [40, 250, -145, -145];
    const PLACINGS: [Placing; 4] = [2, 1, 3, 3];

    fn finished(table: &str, players: &[String]) -> tpb::GameFinished {
        tpb::GameFinished {
            table_id: table.to_owned(),
            players: (0u32..)
                .zip(players)
                .map(|(seat, p)| tpb::SeatPlayer {
                    seat,
                    player_id: p.clone(),
                    bot: false,
                    abandoned: false,
                })
                .collect(),
            teams: (0..4)
                .map(|seat| tpb::TeamSeats {
                    team: seat,
                    seats: vec![seat],
                })
                .collect(),
            final_scores: SCORES.to_vec(),
            winner: 1,
            variant: Some(tpb::TableOptions {
                tarot: Some(tpb::TarotOptions {
                    seats: 4,
                    rounds: 1,
                }),
                ..Default::default()
            }),
            hands_played: 4,
            reason: tpb::FinishReason::Completed as i32,
        }
    }

    /// Each seat's `RatingChanged`, ratings before as given.
    fn changes(table: &str, players: &[String], before: [f64; 4]) -> Vec<rpb::RatingChanged> {
        let by_seat: Vec<(Rating, Placing)> = before
            .iter()
            .map(|&r| Rating::new(r).unwrap())
            .zip(PLACINGS)
            .collect();
        let computed = each_alone(&by_seat, DEFAULT_K).unwrap();
        computed
            .iter()
            .enumerate()
            .map(|(s, c)| rpb::RatingChanged {
                player_id: players[s].clone(),
                table_id: table.to_owned(),
                game_kind: "tarot/4".into(),
                rating_before: c.before().value(),
                rating_after: c.after().value(),
                expectation: c.expectation(),
                score: c.score().value(),
                k: c.k().value(),
                opponents: (1..4)
                    .map(|d| (s + d) % 4)
                    .zip(c.weights())
                    .map(|(o, weight)| rpb::Opponent {
                        player_id: players[o].clone(),
                        rating_before: before[o],
                        weight,
                    })
                    .collect(),
                games_played: 3,
                abandoned: false,
                seat: s as u32,
            })
            .collect()
    }

    fn check(finished: &tpb::GameFinished, changes: &[rpb::RatingChanged]) -> Report {
        let header = Header {
            format: String::new(),
            table_id: finished.table_id.clone(),
            checkpoint: String::new(),
            server_seed: String::new(),
        };
        let events: Vec<Ev> = changes
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut log = Log::new();
                log.append(&format!("rating-{}", m.player_id), &m.table_id, m);
                Ev {
                    line: i + 1,
                    env: log.leaves.pop().unwrap(),
                }
            })
            .collect();
        let mut report = Report::default();
        GameAudit::new(&header, &events, None, &[]).ratings(&mut report, finished);
        report
    }

    fn game() -> (String, Vec<String>) {
        (Uuid::now_v7().to_string(), players().to_vec())
    }

    #[test]
    fn an_honest_tarot_game_passes() {
        let (table, players) = game();
        let before = [1510.0, 1620.0, 1480.0, 1390.0];
        let recorded = changes(&table, &players, before);
        // Seat 2 level last with seat 3: (0 + 0.5) / 3; seat 0 above two of three.
        assert_eq!(recorded[2].score, 1.0 / 6.0);
        assert_eq!(recorded[0].score, 2.0 / 3.0);
        let report = check(&finished(&table, &players), &recorded);
        assert_clean(&report);
        assert_eq!(report.ratings, 4);
        assert_eq!(report.checks["rating"].checked, 4);
    }

    #[test]
    fn a_tampered_tarot_rating_fails() {
        let (table, players) = game();
        let before = [1510.0, 1620.0, 1480.0, 1390.0];
        let honest = changes(&table, &players, before);
        let finished = finished(&table, &players);
        type Spoil = Box<dyn Fn(&mut rpb::RatingChanged)>;
        let spoils: Vec<(&str, Spoil)> = vec![
            // One ulp of the new rating.
            (
                "recomputed",
                Box::new(|m| m.rating_after = f64::from_bits(m.rating_after.to_bits() + 1)),
            ),
            // Scored as the team games would (a loss for all but the winner).
            ("score", Box::new(|m| m.score = 0.0)),
            // An opponent dropped: the game has three others.
            (
                "other players",
                Box::new(|m| {
                    m.opponents.pop();
                }),
            ),
            // The same opponent twice.
            (
                "once",
                Box::new(|m| m.opponents[1].player_id = m.opponents[0].player_id.clone()),
            ),
            // An opponent's weight.
            ("weight", Box::new(|m| m.opponents[0].weight = 0.9)),
        ];
        for (what, spoil) in spoils {
            let mut recorded = honest.clone();
            spoil(&mut recorded[2]);
            let report = check(&finished, &recorded);
            assert_fails(&report, "rating", 3);
            let detail = &report.failures[0].detail;
            assert!(detail.contains(what), "{what}: {detail}");
        }
        // An abandoned seat scores a loss whatever its placing.
        let mut abandoned = finished.clone();
        abandoned.players[2].abandoned = true;
        let report = check(&abandoned, &honest);
        assert_fails(&report, "rating", 3);
    }
}
