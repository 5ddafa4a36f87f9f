//! `fairdeal audit` against exports built here the way the platform writes them: a match
//! played by the rules engine's bots, dealt from committed seeds, recorded as the tables,
//! commitment, dealing and rating services record it, sealed into hash-chained envelopes,
//! put in an RFC 9162 tree with a signed checkpoint. Then one thing at a time is tampered
//! with, and each time the audit must fail naming the right check and line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use fairdeal_event::{Envelope, GENESIS_PREV_HASH, NewEvent, StreamId, compute_hash, seal};
use fairdeal_fairness::Deck;
use fairdeal_fairness::client_seed::{contributions_hash, table_client_seed};
use fairdeal_fairness::commitment::Commitment;
use fairdeal_fairness::deal::Deal;
use fairdeal_games::sim::{MatchSetup, play_match};
use fairdeal_games::{Bid, Event, HeuristicBot, MatchEnd, Seat, Suit, TableOptions};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating::{KFactor, Rating, TeamOutcome, four_seats};
use fairdeal_tlog::export::{
    Consistency, EventLine, FORMAT, Header, Line, decode_bytes, encode_bytes, encode_hashes,
};
use fairdeal_tlog::{Checkpoint, NoteSigner, NoteVerifier, Tree};
use prost::{Message, Name};
use uuid::Uuid;

use super::{Report, audit};

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
    let client_seed = table_client_seed(&contributions, None);
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
            delayed_source: String::new(),
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

    /// The export, as the ledger writes it, with consistency proofs from `previous`.
    fn export(&self, previous: &[u64]) -> Vec<Line> {
        let tree = self.tree(self.log.leaves.len());
        let mut lines = vec![Line::Header(Header {
            format: FORMAT.into(),
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
        let own = [
            format!("table-{}", self.table_id),
            format!("commitmenttable-{}", self.table_id),
            format!("deals-{}", self.table_id),
        ];
        for (i, env) in self.log.leaves.iter().enumerate() {
            if env.correlation_id == self.table_id || own.contains(&env.stream_id) {
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

fn text(lines: &[Line]) -> String {
    lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect()
}

fn run(game: &Game, lines: &[Line]) -> Report {
    audit(&text(lines), &game.key(), None)
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
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert!(report.hands >= 2 && report.moves > 40, "{report:?}");
    assert_eq!(report.ratings, 4);
    assert_eq!(report.streams, 3 + 4);
    for check in [
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
    ] {
        assert!(report.checks[check].checked > 0, "{check} was not checked");
    }
    // The rating stream of player 0 is exported from version 2: a partial stream passes.
    assert_eq!(report.events as usize, lines.len() - 1);
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

/// Audit speed beside the hash-chain bound: one full match's export audited `ROUNDS` times,
/// and SHA-256 over the same envelope bytes (the least any chain check must do).
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
    let text = text(&lines);
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
    for _ in 0..ROUNDS {
        let report = audit(&text, &key, None);
        assert!(report.failures.is_empty());
    }
    let audit_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut sink = 0u8;
    for _ in 0..ROUNDS {
        for e in &envelopes {
            sink ^= Sha256::digest(e)[0];
        }
    }
    let sha_s = started.elapsed().as_secs_f64();
    let bytes: usize = envelopes.iter().map(Vec::len).sum();
    println!(
        "export of {} events ({} envelope bytes, {} text bytes), {ROUNDS} rounds: audit {:.0} events/s; \
         SHA-256 over the same envelopes {:.0} events/s ({sink})",
        envelopes.len(),
        bytes,
        text.len(),
        events / audit_s,
        events / sha_s
    );
}

/// Writes the fixture's export and its log key to the directory `$FAIRDEAL_AUDIT_SAMPLE`,
/// for timing the release `fairdeal audit` binary on it (docs/performance.md).
#[test]
#[ignore = "writes files; run by hand"]
fn write_sample_export() {
    let dir = std::env::var("FAIRDEAL_AUDIT_SAMPLE").expect("FAIRDEAL_AUDIT_SAMPLE");
    let game = record_game();
    let dir = std::path::Path::new(&dir);
    std::fs::write(dir.join("game.ndjson"), text(&game.export(&[]))).unwrap();
    std::fs::write(dir.join("log.key"), game.key().to_string()).unwrap();
}
