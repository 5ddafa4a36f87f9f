//! `fairdeal audit FILE --log-key KEY [--previous CHECKPOINT]`: a finished game's export from
//! the ledger (NDJSON, `fairdeal_tlog::export`), checked offline with nothing but the log's
//! public key. Both export formats are read: format 2 (what the ledger writes now: format 2
//! leaves, salted commitments, with each event's content as the ledger's visibility rule
//! discloses it) and format 1 (written before: every leaf an envelope, every event shown).
//! The header's `format` decides how the event lines are read.
//!
//! Checks, each named in the output:
//! - `format`: every line parses; one header, first; a format 2 event line has exactly the
//!   fields its leaf format and disclosure call for, each well-formed.
//! - `checkpoint`: the header's checkpoint is signed by `--log-key` (C2SP signed note).
//! - `consistency`: with `--previous`, the export's tree extends that checkpoint's.
//! - `inclusion`: every line's leaf (format 2 leaf: the entry; format 1 leaf: the envelope,
//!   or the given `leaf_hash` when it is not disclosed) is the leaf its index names under the
//!   checkpoint, whatever the line discloses.
//! - `opening` (format 2 leaves): the leaf is an entry (`fairdeal_tlog::entry`); a `full`
//!   line's envelope is in its canonical encoding, the body commitment opens with
//!   `body_salt` over its body and the chain commitment with `chain_salt` over its
//!   `prev_hash` and `hash`; a `body` line's body commitment opens over its body, which is
//!   an envelope's canonical encoding without `prev_hash` and `hash`.
//! - `disclosure` (format 2): every line of the game's record is disclosed in full: the
//!   table stream `table-<id>`, the commitment session `commitmenttable-<id>`, the deals
//!   `deals-<id>` and every `RatingChanged`. Other lines may be withheld (chat, accounts) or
//!   erased (a removed chat line): they are listed in the summary (`erased`, `withheld` by
//!   reason), not failed.
//! - `order`: event lines are in strictly increasing leaf order.
//! - `envelope`: every disclosed envelope (or body) decodes and agrees with its line's
//!   `stream_id`, `version` and `event_type`.
//! - `chain`: every disclosed event's hash is SHA-256(prev_hash || canonical bytes); the
//!   game's record streams run from version 1 without gaps (in a format 1 file, every
//!   stream named `*-<table id>`), each linked to the one before; other streams (a player's
//!   ratings, in format 2 the table's chat channel) link wherever two consecutive versions
//!   are both disclosed in full, a withheld or erased line counting as its version.
//! - `commitment`: SHA-256(revealed seed) is the commitment the table, the commitment
//!   service and every hand name; every recorded reveal is that seed.
//! - `client_seed`: recomputed from the contributions and the delayed value; every hand and
//!   deal used it.
//! - `deal`: every hand re-dealt from the seeds (salt = hand number) is what each seat got.
//! - `replay`: every move re-decided by the rules engine (crates/games): legal, by the seat
//!   whose turn it was, every trick won by the right seat.
//! - `score`: every hand's score is what the rules give.
//! - `result`: the final scores, the winner and the players of `GameFinished`; or, for a
//!   table that reached its latest end unfinished (`TableExpired`), that it had that latest
//!   end (the commitment's), expired no earlier, before the rules ended its match, and that
//!   nothing was played after it (and `rating`: nobody was rated for it).
//! - `rating`: every `RatingChanged` recomputed (SPEC 6, crates/rating, bit for bit) from
//!   the game's result and the players' ratings before it.
//! - `drand_chain`, `drand_round`, `drand_signature`, `drand_randomness`, `drand_fallback`:
//!   for a table whose commitment fixed a drand round, the round bound verified offline
//!   against the chain the auditor chose (quicknet built in, or another chain's info given
//!   to [`audit_with_chain`]); listed in the `audit_drand` module. Tables without a drand
//!   round run none of them.
//! - `timelock_seed`, `timelock_open`: for a table whose commitment published its seed
//!   timelocked to a later drand round, the ciphertext names that round of the audited chain,
//!   the round is due after the table's latest end, no hand was dealt from the latest end on,
//!   and (`timelock_open`, with the round's beacon given to [`audit_with_timelock`]) it
//!   decrypts to the committed and revealed seed; listed in the `audit_timelock` module.
//!
//! The game checks (`commitment` to `rating`) read the events disclosed in full. What a
//! withheld or erased line says of itself (`stream_id`, `version`, `event_type`,
//! `disclosure`) is the ledger's word: its leaf is proven, its content cannot be opened.
//!
//! `fairdeal audit` prints one JSON line per failed check (`{"check", "line", "detail"}`), then a summary
//! line (what was checked, counts, the erased lines by name, the withheld ones counted by
//! reason). Exit status 1 when anything failed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fairdeal_drand::{Beacon, Chain};
use fairdeal_event::{Envelope, GENESIS_PREV_HASH, body_bytes, compute_hash};
use fairdeal_fairness::client_seed::{contributions_hash, table_client_seed};
use fairdeal_fairness::commitment::Commitment;
use fairdeal_fairness::deal::Deal;
use fairdeal_games_wire::table::seat_of;
use fairdeal_games_wire::{WireEvent, WireGame};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating::{
    Exactness, KFactor, Opponents, Placing, Rating, RecordedChange, Score, placing_score,
};
use fairdeal_table_game::{Actor, Dealt, Layout, MAX_SEATS, Seat, TableGame, VerifyError};
use fairdeal_tlog::entry::Salt;
use fairdeal_tlog::export::{
    Consistency, Content, Disclosure, EventLine, FORMAT, FORMAT_V1, Header, Line, decode_bytes,
    decode_hashes, v1,
};
use fairdeal_tlog::{Checkpoint, Entry, Hash, Note, NoteVerifier};
use prost::{Message, Name};
use serde::Serialize;

/// The game the auditor replays: Jeu du 10, through its contract (`TableGame`) and its
/// messages (`WireGame`), as the tables service plays it.
type Audited = fairdeal_games_wire::any::AnyGame;

/// The checks, in the order the summary lists them.
pub const CHECKS: [&str; 23] = [
    "format",
    "checkpoint",
    "consistency",
    "inclusion",
    "opening",
    "disclosure",
    "order",
    "envelope",
    "chain",
    "commitment",
    "client_seed",
    "deal",
    "replay",
    "score",
    "result",
    "rating",
    "drand_chain",
    "drand_round",
    "drand_signature",
    "drand_randomness",
    "drand_fallback",
    "timelock_seed",
    "timelock_open",
];

/// One failed check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The check's name (one of [`CHECKS`]).
    pub check: &'static str,
    /// The file's line (1-based); 0 for the file as a whole.
    pub line: usize,
    /// What differs.
    pub detail: String,
}

/// Checked and failed counts of one check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub checked: u64,
    pub failed: u64,
}

/// An event line named by what the ledger recorded of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedLine {
    /// The file's line (1-based).
    pub line: usize,
    /// The line's `stream_id`.
    pub stream_id: String,
    /// The line's `version`.
    pub version: u64,
    /// The line's `event_type`.
    pub event_type: String,
}

/// Everything an audit found.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// Per check.
    pub checks: BTreeMap<&'static str, Count>,
    /// Every failure, in the order found.
    #[serde(skip)]
    pub failures: Vec<Failure>,
    /// Events disclosed in full (those the game checks read).
    pub events: u64,
    /// Streams in the file (disclosed or not).
    pub streams: u64,
    /// Hands dealt.
    pub hands: u64,
    /// Moves replayed (bids, passes, trumps, cards).
    pub moves: u64,
    /// Rating changes recomputed.
    pub ratings: u64,
    /// The checkpoint's tree size.
    pub tree_size: u64,
    /// Lines whose content is erased for good (format 2), in file order.
    pub erased: Vec<NamedLine>,
    /// Lines neither disclosed in full nor erased (format 2), counted by disclosure
    /// (`withheld_personal`, `withheld_game`, `withheld_unknown`, and `body` for a line whose
    /// chain link is withheld).
    pub withheld: BTreeMap<&'static str, u64>,
}

impl Report {
    /// Records one check of `check` about `line`.
    fn check(&mut self, check: &'static str, line: usize, result: Result<(), String>) {
        let count = self.checks.entry(check).or_default();
        count.checked += 1;
        if let Err(detail) = result {
            count.failed += 1;
            self.failures.push(Failure {
                check,
                line,
                detail,
            });
        }
    }

    /// Records a failure of `check` about `line`.
    fn fail(&mut self, check: &'static str, line: usize, detail: impl Into<String>) {
        self.check(check, line, Err(detail.into()));
    }

    /// Whether `check` failed anywhere.
    pub fn failed(&self, check: &str) -> bool {
        self.failures.iter().any(|f| f.check == check)
    }
}

/// One decoded event of the file.
#[derive(Debug, Clone)]
struct Ev {
    /// The file's line.
    line: usize,
    /// The envelope.
    env: Envelope,
}

impl Ev {
    /// The payload as `M` when the event's type is `M`'s: `None` for another type,
    /// `Some(Err)` when it does not decode.
    fn payload<M: Message + Name + Default>(&self) -> Option<Result<M, String>> {
        fairdeal_event::is_event_type::<M>(&self.env.event_type).then(|| {
            M::decode(self.env.payload.as_slice())
                .map_err(|e| format!("{} does not decode: {e}", M::NAME))
        })
    }
}

/// The export format the header names; event lines are read in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `fairdeal-game-export/1`.
    V1,
    /// `fairdeal-game-export/2` (also how a file without a readable header is read).
    V2,
}

/// One line, read in the file's format.
#[derive(Debug)]
enum Parsed {
    Header(Header),
    Consistency(Consistency),
    EventV1(v1::EventLine),
    EventV2(EventLine),
}

impl Parsed {
    fn read(format: Format, raw: &str) -> Result<Self, serde_json::Error> {
        Ok(match format {
            Format::V1 => match serde_json::from_str::<v1::Line>(raw)? {
                v1::Line::Header(h) => Self::Header(h),
                v1::Line::Consistency(c) => Self::Consistency(c),
                v1::Line::Event(e) => Self::EventV1(e),
            },
            Format::V2 => match serde_json::from_str::<Line>(raw)? {
                Line::Header(h) => Self::Header(h),
                Line::Consistency(c) => Self::Consistency(c),
                Line::Event(e) => Self::EventV2(e),
            },
        })
    }
}

/// One event line, read in the file's format.
#[derive(Debug)]
struct Row {
    /// The file's line.
    line: usize,
    leaf_index: u64,
    stream_id: String,
    version: u64,
    event_type: String,
    proof: Vec<String>,
    /// `None` when the line's content could not be read (a failure is recorded).
    content: Option<Content>,
}

impl Row {
    fn named(&self) -> NamedLine {
        NamedLine {
            line: self.line,
            stream_id: self.stream_id.clone(),
            version: self.version,
            event_type: self.event_type.clone(),
        }
    }

    fn from_v2(n: usize, e: EventLine, content: Option<Content>) -> Self {
        Self {
            line: n,
            leaf_index: e.leaf_index,
            stream_id: e.stream_id,
            version: e.version,
            event_type: e.event_type,
            proof: e.proof,
            content,
        }
    }

    /// A format 1 line is a format 2 line of leaf format 1 disclosed in full.
    fn from_v1(report: &mut Report, n: usize, e: v1::EventLine) -> Self {
        let content = match decode_bytes(&e.envelope) {
            Ok(envelope) => Some(Content::V1Envelope { envelope }),
            Err(err) => {
                report.fail("envelope", n, format!("envelope: {err}"));
                None
            }
        };
        Self {
            line: n,
            leaf_index: e.leaf_index,
            stream_id: e.stream_id,
            version: e.version,
            event_type: e.event_type,
            proof: e.proof,
            content,
        }
    }
}

/// One line's place in its stream's chain.
#[derive(Debug)]
struct Link {
    line: usize,
    stream_id: String,
    version: u64,
    /// Index into the disclosed events, when the line is disclosed in full.
    event: Option<usize>,
}

/// The streams that make up the game's record: exported whole and disclosed in full.
fn record_streams(table_id: &str) -> [String; 3] {
    [
        format!("table-{table_id}"),
        format!("commitmenttable-{table_id}"),
        format!("deals-{table_id}"),
    ]
}

/// Audits an export's text against the log key and an optional previous checkpoint; a
/// table's drand round, if it has one, is verified against quicknet (built in).
pub fn audit(text: &str, verifier: &NoteVerifier, previous: Option<&str>) -> Report {
    // Quicknet's key is a constant checked by crates/drand's tests; were it ever refused,
    // every drand table would fail `drand_chain` rather than the audit panicking.
    let quicknet = Chain::quicknet().ok();
    audit_inner(text, verifier, previous, quicknet.as_ref(), &[])
}

/// [`audit`] with a table's drand round verified against `drand_chain` (e.g. a local test
/// chain, or a chain given by its info with `--drand-chain`) instead of quicknet.
pub fn audit_with_chain(
    text: &str,
    verifier: &NoteVerifier,
    previous: Option<&str>,
    drand_chain: &Chain,
) -> Report {
    audit_inner(text, verifier, previous, Some(drand_chain), &[])
}

/// [`audit_with_chain`] with beacons of `drand_chain` the auditor has (e.g. from
/// `--timelock-round` and `--timelock-signature`): a timelocked seed is decrypted with the
/// beacon of its round (`timelock_open`). Each beacon is verified against the chain there.
pub fn audit_with_timelock(
    text: &str,
    verifier: &NoteVerifier,
    previous: Option<&str>,
    drand_chain: &Chain,
    timelock_beacons: &[Beacon],
) -> Report {
    audit_inner(
        text,
        verifier,
        previous,
        Some(drand_chain),
        timelock_beacons,
    )
}

fn audit_inner(
    text: &str,
    verifier: &NoteVerifier,
    previous: Option<&str>,
    drand_chain: Option<&Chain>,
    timelock_beacons: &[Beacon],
) -> Report {
    let mut report = Report::default();
    for check in CHECKS {
        report.checks.insert(check, Count::default());
    }
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    // The header says how to read the rest. Both formats' headers are the same line, so a
    // format 2 read of line 1 finds either; an unknown format is read as the current one.
    let format = match lines.first().map(|raw| serde_json::from_str::<Line>(raw)) {
        Some(Ok(Line::Header(h))) if h.format == FORMAT_V1 => Format::V1,
        _ => Format::V2,
    };
    let mut header: Option<Header> = None;
    let mut consistency = Vec::new();
    let mut rows = Vec::new();
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        match Parsed::read(format, raw) {
            Err(e) => report.fail("format", n, format!("not an export line: {e}")),
            Ok(Parsed::Header(h)) => {
                if n != 1 || header.is_some() {
                    report.fail("format", n, "the header must be the first line, once");
                } else {
                    report.check("format", n, Ok(()));
                    header = Some(h);
                }
            }
            Ok(Parsed::Consistency(c)) => {
                report.check("format", n, Ok(()));
                consistency.push((n, c));
            }
            Ok(Parsed::EventV1(e)) => {
                report.check("format", n, Ok(()));
                let row = Row::from_v1(&mut report, n, e);
                rows.push(row);
            }
            Ok(Parsed::EventV2(e)) => {
                let content = e.content();
                report.check(
                    "format",
                    n,
                    content
                        .as_ref()
                        .map(|_| ())
                        .map_err(|err| format!("event line: {err}")),
                );
                rows.push(Row::from_v2(n, e, content.ok()));
            }
        }
    }
    let Some(header) = header else {
        report.fail("format", 1, "no header line");
        return report;
    };
    if header.format != FORMAT && header.format != FORMAT_V1 {
        report.fail(
            "format",
            1,
            format!(
                "format {:?}, expected {FORMAT:?} (or {FORMAT_V1:?})",
                header.format
            ),
        );
    }

    // The checkpoint: verified, or (to keep checking the rest) its unverified body.
    let checkpoint = match Checkpoint::open(
        header.checkpoint.as_bytes(),
        verifier.name(),
        std::slice::from_ref(verifier),
    ) {
        Ok(c) => {
            report.check("checkpoint", 1, Ok(()));
            Some(c)
        }
        Err(e) => {
            report.fail("checkpoint", 1, format!("not signed by the log key: {e}"));
            Note::parse(header.checkpoint.as_bytes())
                .ok()
                .and_then(|note| Checkpoint::parse_body(note.text()).ok())
        }
    };
    report.tree_size = checkpoint.as_ref().map_or(0, Checkpoint::size);
    check_consistency(
        &mut report,
        checkpoint.as_ref(),
        &consistency,
        verifier,
        previous,
    );

    // Event lines: order, inclusion, opening, disclosure, envelope.
    let record = record_streams(&header.table_id);
    let mut events = Vec::with_capacity(rows.len());
    let mut links = Vec::with_capacity(rows.len());
    let mut last_index: Option<u64> = None;
    for row in &rows {
        let increasing = last_index.is_none_or(|last| row.leaf_index > last);
        report.check(
            "order",
            row.line,
            if increasing {
                Ok(())
            } else {
                Err(format!(
                    "leaf {} after leaf {}: lines must be in leaf order",
                    row.leaf_index,
                    last_index.unwrap_or(0)
                ))
            },
        );
        last_index = Some(row.leaf_index);
        let Some(content) = &row.content else {
            continue;
        };
        if let Some(checkpoint) = &checkpoint {
            check_inclusion(&mut report, row, content, checkpoint);
        }
        if format == Format::V2 {
            check_disclosure(&mut report, row, content.disclosure(), &record);
        }
        match check_content(&mut report, row, content) {
            Some(env) => {
                links.push(Link {
                    line: row.line,
                    stream_id: env.stream_id.clone(),
                    version: env.stream_version,
                    event: Some(events.len()),
                });
                events.push(Ev {
                    line: row.line,
                    env,
                });
            }
            // Not disclosed in full: in its stream by the ledger's word, its link sealed.
            None if content.disclosure() != Disclosure::Full => links.push(Link {
                line: row.line,
                stream_id: row.stream_id.clone(),
                version: row.version,
                event: None,
            }),
            // An envelope that does not decode (a failure is recorded): no link to check.
            None => {}
        }
    }
    if checkpoint.is_none() && !rows.is_empty() {
        report.fail(
            "inclusion",
            1,
            "no readable checkpoint to prove the events against",
        );
    }
    report.events = events.len() as u64;

    check_chains(&mut report, &events, &links, &header.table_id, format);
    let game = GameAudit::new(&header, &events, drand_chain, timelock_beacons);
    game.run(&mut report);
    report
}

/// A check's result from the problems it found: passed when there are none, else all of
/// them.
fn verdict<S: std::borrow::Borrow<str>>(problems: &[S]) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// `--previous`: the export's checkpoint must extend it.
fn check_consistency(
    report: &mut Report,
    checkpoint: Option<&Checkpoint>,
    lines: &[(usize, Consistency)],
    verifier: &NoteVerifier,
    previous: Option<&str>,
) {
    let Some(previous) = previous else {
        return;
    };
    let older = match Checkpoint::open(
        previous.as_bytes(),
        verifier.name(),
        std::slice::from_ref(verifier),
    ) {
        Ok(c) => c,
        Err(e) => {
            report.fail(
                "consistency",
                0,
                format!("--previous is not a checkpoint of this log: {e}"),
            );
            return;
        }
    };
    let Some(checkpoint) = checkpoint else {
        report.fail(
            "consistency",
            1,
            "no readable checkpoint to compare with --previous",
        );
        return;
    };
    if older.size() > checkpoint.size() {
        report.fail(
            "consistency",
            1,
            format!(
                "--previous has size {}, beyond the export's {}: export again",
                older.size(),
                checkpoint.size()
            ),
        );
        return;
    }
    let Some((n, line)) = lines.iter().find(|(_, c)| c.old_size == older.size()) else {
        report.fail(
            "consistency",
            1,
            format!(
                "no consistency proof from size {} (export with previous_tree_sizes = {})",
                older.size(),
                older.size()
            ),
        );
        return;
    };
    let result = decode_hashes(&line.proof).and_then(|proof| {
        checkpoint.verify_extends(&older, &proof).map_err(|e| {
            format!(
                "the tree of size {} does not extend --previous: {e}",
                checkpoint.size()
            )
        })
    });
    report.check("consistency", *n, result);
}

/// The line's leaf (or leaf hash) is leaf `leaf_index` of the checkpoint's tree.
fn check_inclusion(report: &mut Report, row: &Row, content: &Content, checkpoint: &Checkpoint) {
    let result = decode_hashes(&row.proof).and_then(|proof| {
        checkpoint
            .verify_inclusion(&content.leaf_hash(), row.leaf_index, &proof)
            .map_err(|e| {
                format!(
                    "leaf {} is not in the checkpoint's tree of size {}: {e}",
                    row.leaf_index,
                    checkpoint.size()
                )
            })
    });
    report.check("inclusion", row.line, result);
}

/// A line of the game's record must be disclosed in full: the game checks read every one of
/// them. Any other line is the ledger's to withhold or erase; it is listed, not failed.
fn check_disclosure(report: &mut Report, row: &Row, disclosure: Disclosure, record: &[String]) {
    match disclosure {
        Disclosure::Full => {}
        Disclosure::Erased => report.erased.push(row.named()),
        other => *report.withheld.entry(other.as_str()).or_default() += 1,
    }
    let of_record = record.contains(&row.stream_id)
        || fairdeal_event::is_event_type::<rpb::RatingChanged>(&row.event_type);
    report.check(
        "disclosure",
        row.line,
        if !of_record || disclosure == Disclosure::Full {
            Ok(())
        } else {
            Err(format!(
                "{} version {} ({}) is part of the game's record but is {disclosure}, not \
                 disclosed in full",
                row.stream_id, row.version, row.event_type
            ))
        },
    );
}

/// The line's content: its opening (format 2 leaves, one `opening` check a line) and the
/// envelope against the line's fields. Returns the envelope of a line disclosed in full, for
/// the chain and game checks.
fn check_content(report: &mut Report, row: &Row, content: &Content) -> Option<Envelope> {
    match content {
        Content::V1Envelope { envelope } => decode_envelope(report, row, envelope, "envelope"),
        Content::V1Sealed { .. } => None,
        Content::Full {
            leaf,
            envelope,
            body_salt,
            chain_salt,
        } => {
            let env = decode_envelope(report, row, envelope, "envelope");
            let opened = Entry::parse(leaf)
                .map_err(|e| format!("leaf: {e}"))
                .and_then(|entry| match &env {
                    Some(env) => open_full(&entry, envelope, env, body_salt, chain_salt),
                    // The envelope's failure is recorded: there is nothing to open over.
                    None => Ok(()),
                });
            report.check("opening", row.line, opened);
            env
        }
        Content::Body {
            leaf,
            body,
            body_salt,
        } => {
            let env = decode_envelope(report, row, body, "body");
            let opened = Entry::parse(leaf)
                .map_err(|e| format!("leaf: {e}"))
                .and_then(|entry| {
                    let mut problems = Vec::new();
                    if !entry.opens_body(body_salt, body) {
                        problems.push("the body commitment does not open with body_salt over body");
                    }
                    if let Some(env) = &env {
                        if !env.prev_hash.is_empty() || !env.hash.is_empty() {
                            problems.push("the body holds a chain link (prev_hash or hash)");
                        }
                        if body_bytes(env) != *body {
                            problems.push("the body is not an envelope's canonical encoding");
                        }
                    }
                    verdict(&problems)
                });
            report.check("opening", row.line, opened);
            // Not an event of the game: its chain link, so its place in the stream, stays
            // sealed.
            None
        }
        Content::Sealed { leaf, .. } => {
            // Nothing opens; the leaf is still an entry.
            report.check(
                "opening",
                row.line,
                Entry::parse(leaf)
                    .map(|_| ())
                    .map_err(|e| format!("leaf: {e}")),
            );
            None
        }
    }
}

/// A full line's entry opens over its envelope: the body with `body_salt`, the link with
/// `chain_salt`. The envelope must be its own canonical encoding, so that no byte of it
/// escapes the commitments (a format 1 leaf binds every byte by being the envelope).
fn open_full(
    entry: &Entry,
    bytes: &[u8],
    env: &Envelope,
    body_salt: &Salt,
    chain_salt: &Salt,
) -> Result<(), String> {
    let mut problems = Vec::new();
    if env.encode_to_vec() != bytes {
        problems.push("the envelope is not in its canonical encoding".to_owned());
    }
    if !entry.opens_body(body_salt, &body_bytes(env)) {
        problems.push("the body commitment does not open with body_salt over its body".into());
    }
    match (
        Hash::try_from(env.prev_hash.as_slice()),
        Hash::try_from(env.hash.as_slice()),
    ) {
        (Ok(prev_hash), Ok(hash)) => {
            if !entry.opens_chain(chain_salt, &prev_hash, &hash) {
                problems.push(
                    "the chain commitment does not open with chain_salt over its prev_hash and \
                     hash"
                        .into(),
                );
            }
        }
        _ => problems.push(format!(
            "prev_hash and hash are {} and {} bytes, not 32 each",
            env.prev_hash.len(),
            env.hash.len()
        )),
    }
    verdict(&problems)
}

/// `bytes` (the line's `field`) as an envelope, checked against the line's readable fields.
fn decode_envelope(report: &mut Report, row: &Row, bytes: &[u8], field: &str) -> Option<Envelope> {
    let env = match Envelope::decode(bytes) {
        Ok(env) => env,
        Err(e) => {
            report.fail(
                "envelope",
                row.line,
                format!("{field} does not decode: {e}"),
            );
            return None;
        }
    };
    let mut differs = Vec::new();
    if env.stream_id != row.stream_id {
        differs.push(format!(
            "stream_id {:?} (envelope {:?})",
            row.stream_id, env.stream_id
        ));
    }
    if env.stream_version != row.version {
        differs.push(format!(
            "version {} (envelope {})",
            row.version, env.stream_version
        ));
    }
    if env.event_type != row.event_type {
        differs.push(format!(
            "event_type {:?} (envelope {:?})",
            row.event_type, env.event_type
        ));
    }
    report.check(
        "envelope",
        row.line,
        if differs.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the line's {} differs from its {field}",
                differs.join(", ")
            ))
        },
    );
    Some(env)
}

/// Every stream's hash chain and versions.
fn check_chains(
    report: &mut Report,
    events: &[Ev],
    links: &[Link],
    table_id: &str,
    format: Format,
) {
    let mut streams: BTreeMap<&str, Vec<&Link>> = BTreeMap::new();
    for link in links {
        streams
            .entry(link.stream_id.as_str())
            .or_default()
            .push(link);
    }
    report.streams = streams.len() as u64;
    let record = record_streams(table_id);
    let own_suffix = format!("-{table_id}");
    for (stream, stream_links) in streams {
        // Streams the export holds whole, from version 1 without a gap. Format 2: the game's
        // record. Format 1 keeps its rule, every stream of the game's own (`*-<id>`, its chat
        // channel included): a format 1 file predates withholding and erasure, so the ledger
        // wrote every line of those streams in full and a gap in one is a dropped line;
        // relaxing the rule for old files would only let that pass.
        let whole = match format {
            Format::V1 => stream.ends_with(&own_suffix),
            Format::V2 => record.iter().any(|r| r == stream),
        };
        let mut prev: Option<(u64, Option<&Envelope>)> = None;
        for link in stream_links {
            let env = link.event.and_then(|i| events.get(i)).map(|ev| &ev.env);
            let version = link.version;
            let mut problems = Vec::new();
            if let Some(env) = env
                && compute_hash(env).as_slice() != env.hash.as_slice()
            {
                problems
                    .push("its hash is not SHA-256(prev_hash || its canonical bytes)".to_owned());
            }
            match prev {
                None if whole => {
                    if version != 1 {
                        problems.push(format!("the stream starts at version {version}, not 1"));
                    } else if env
                        .is_some_and(|e| e.prev_hash.as_slice() != GENESIS_PREV_HASH.as_slice())
                    {
                        problems.push("version 1 must link to 32 zero bytes".into());
                    }
                }
                None => {}
                Some((prev_version, prev_env)) => {
                    let next = prev_version.saturating_add(1);
                    if whole && version != next {
                        problems.push(format!(
                            "version {version} follows version {prev_version} (expected {next})"
                        ));
                    } else if version <= prev_version {
                        problems.push(format!("version {version} follows version {prev_version}"));
                    } else if version == next
                        && let (Some(env), Some(p)) = (env, prev_env)
                        && env.prev_hash != p.hash
                    {
                        problems.push(format!("prev_hash does not link to version {prev_version}"));
                    }
                }
            }
            report.check(
                "chain",
                link.line,
                verdict(&problems).map_err(|p| format!("{stream} version {version}: {p}")),
            );
            prev = Some((version, env));
        }
    }
}

/// The game's event a table event records, if it records one (`HandStarted`,
/// `CardsDealt` and `TalonDealt` are put back together separately), read through the
/// game's wire mapping, as the tables service reads it.
fn engine_event<G: WireGame>(ev: &Ev) -> Option<Result<G::Event, String>> {
    let name = ev.env.event_type.rsplit('.').next().unwrap_or_default();
    let decoded = G::stored_event(&ev.env.event_type, &ev.env.payload)?;
    Some(
        decoded
            .map_err(|e| format!("{name} does not decode: {e}"))
            .and_then(|message: WireEvent| match G::event_of(&message) {
                Some(read) => read
                    .map(|(event, _)| event)
                    .map_err(|e| e.within(name).to_string()),
                None => Err(format!("{name} is none of the game's events")),
            }),
    )
}

/// The dealer of a recorded hand.
fn dealer(started: &tpb::HandStarted) -> Result<Seat, String> {
    seat_of("dealer", started.dealer).map_err(|e| e.within(tpb::HandStarted::NAME).to_string())
}

/// A hand as the table stream records it.
#[derive(Debug, Clone)]
struct HandRecord {
    line: usize,
    started: tpb::HandStarted,
    /// By dealing position: the line and the message.
    dealt: [Option<(usize, tpb::CardsDealt)>; MAX_SEATS],
    /// The talon, when the game deals one: the line and the message.
    talon: Option<(usize, tpb::TalonDealt)>,
}

impl HandRecord {
    /// The hand put back together in the game's cards: the dealer, each seat's cards by
    /// dealing position (the table's `seats` of them) and the talon.
    fn dealt<G: WireGame>(&self, seats: usize) -> Result<Dealt<G::Card>, String> {
        let mut hands = Vec::with_capacity(seats);
        for (position, slot) in self.dealt.iter().take(seats).enumerate() {
            let (_, d) = slot
                .as_ref()
                .ok_or_else(|| format!("no CardsDealt at position {position}"))?;
            hands.push(
                G::cards_of("cards", &d.cards)
                    .map_err(|e| e.within(tpb::CardsDealt::NAME).to_string())?,
            );
        }
        let talon = match &self.talon {
            Some((_, t)) => G::cards_of("cards", &t.cards)
                .map_err(|e| e.within(tpb::TalonDealt::NAME).to_string())?,
            None => Vec::new(),
        };
        Ok(Dealt {
            hand: self.started.hand,
            dealer: dealer(&self.started)?,
            hands,
            talon,
        })
    }
}

/// The game-level checks over the decoded events.
#[derive(Debug)]
struct GameAudit<'a> {
    header: &'a Header,
    table: Vec<&'a Ev>,
    others: Vec<&'a Ev>,
    /// The chain a drand round is verified against (`None`: none could be built).
    drand_chain: Option<&'a Chain>,
    /// The beacons the auditor gave, to open a timelocked seed.
    timelock_beacons: &'a [Beacon],
}

impl<'a> GameAudit<'a> {
    fn new(
        header: &'a Header,
        events: &'a [Ev],
        drand_chain: Option<&'a Chain>,
        timelock_beacons: &'a [Beacon],
    ) -> Self {
        let table_stream = format!("table-{}", header.table_id);
        let (table, others) = events.iter().partition(|e| e.env.stream_id == table_stream);
        Self {
            header,
            table,
            others,
            drand_chain,
            timelock_beacons,
        }
    }

    /// Decoded messages of type `M` among `events`, with their lines; undecodable ones are
    /// failures of `check`.
    fn all<M: Message + Name + Default>(
        report: &mut Report,
        check: &'static str,
        events: &[&Ev],
    ) -> Vec<(usize, M)> {
        let mut out = Vec::new();
        for ev in events {
            match ev.payload::<M>() {
                Some(Ok(m)) => out.push((ev.line, m)),
                Some(Err(e)) => report.fail(check, ev.line, e),
                None => {}
            }
        }
        out
    }

    fn run(&self, report: &mut Report) {
        let created = Self::all::<tpb::TableCreated>(report, "replay", &self.table);
        let Some((created_line, created)) = created.into_iter().next() else {
            report.fail(
                "replay",
                0,
                format!("no TableCreated for table {}", self.header.table_id),
            );
            return;
        };
        let seed = self.header.server_seed.as_str();
        let commitment = Commitment::of(seed).to_hex();
        let hands = self.hands(report);

        // Commitment.
        let expect =
            |report: &mut Report, line: usize, what: &str, recorded: &str, wanted: &str| {
                report.check(
                    "commitment",
                    line,
                    if recorded == wanted {
                        Ok(())
                    } else {
                        Err(format!("{what} is {recorded:?}, expected {wanted:?}"))
                    },
                );
            };
        expect(
            report,
            created_line,
            "TableCreated.commitment (SHA-256 of the revealed seed)",
            &created.commitment,
            &commitment,
        );
        let published =
            Self::all::<cpb::TableCommitmentPublished>(report, "commitment", &self.others);
        for (line, m) in &published {
            expect(
                report,
                *line,
                "TableCommitmentPublished.commitment",
                &m.commitment,
                &commitment,
            );
        }
        let reveals_t = Self::all::<tpb::TableSeedRevealed>(report, "commitment", &self.table);
        let reveals_c = Self::all::<cpb::TableSeedRevealed>(report, "commitment", &self.others);
        if reveals_t.is_empty() {
            report.fail(
                "commitment",
                0,
                "the table stream holds no TableSeedRevealed: the seed is not revealed",
            );
        }
        // A reveal names the seed and its commitment, in the table's stream as in the
        // commitment service's.
        let revealed = reveals_t
            .iter()
            .map(|(line, m)| (*line, &m.server_seed, &m.commitment))
            .chain(
                reveals_c
                    .iter()
                    .map(|(line, m)| (*line, &m.server_seed, &m.commitment)),
            );
        for (line, server_seed, recorded) in revealed {
            expect(
                report,
                line,
                "TableSeedRevealed.server_seed",
                server_seed,
                seed,
            );
            expect(
                report,
                line,
                "TableSeedRevealed.commitment",
                recorded,
                &commitment,
            );
        }
        for h in &hands {
            expect(
                report,
                h.line,
                "HandStarted.commitment",
                &h.started.commitment,
                &commitment,
            );
        }
        let dealt = Self::all::<dpb::HandDealt>(report, "deal", &self.others);
        for (line, m) in &dealt {
            expect(
                report,
                *line,
                "HandDealt.commitment",
                &m.commitment,
                &commitment,
            );
        }

        // Client seed, and the drand round in it.
        let client_seed = self.client_seed(report, &published, &hands, &dealt, &reveals_t);
        let commitment_stream = format!("commitmenttable-{}", self.header.table_id);
        let commitment_events: Vec<&Ev> = self
            .others
            .iter()
            .copied()
            .filter(|e| e.env.stream_id == commitment_stream)
            .collect();
        drand::check(
            report,
            self.drand_chain,
            &self.header.table_id,
            &commitment_events,
        );
        let deals_stream = format!("deals-{}", self.header.table_id);
        let deal_events: Vec<&Ev> = self
            .others
            .iter()
            .copied()
            .filter(|e| e.env.stream_id == deals_stream)
            .collect();
        timelock::check(
            report,
            self.drand_chain,
            self.timelock_beacons,
            &commitment_events,
            &deal_events,
        );

        // Deals.
        let layout = Audited::options_of("options", created.options.as_ref())
            .map_err(|e| e.within(tpb::TableCreated::NAME).to_string())
            .and_then(|options| Audited::layout(&options).map_err(|e| e.to_string()));
        let layout = match layout {
            Ok(layout) => layout,
            Err(e) => {
                report.fail("deal", created_line, e);
                return;
            }
        };
        for h in &hands {
            report.hands += 1;
            self.deal(report, layout, seed, &client_seed, h, &dealt);
        }

        // Replay, scores, result.
        self.replay::<Audited>(report, layout, &hands);
    }

    /// The table's hands: each `HandStarted` with the `CardsDealt` that follow it.
    fn hands(&self, report: &mut Report) -> Vec<HandRecord> {
        let mut hands: Vec<HandRecord> = Vec::new();
        for ev in &self.table {
            if let Some(m) = ev.payload::<tpb::HandStarted>() {
                match m {
                    Ok(started) => hands.push(HandRecord {
                        line: ev.line,
                        started,
                        dealt: Default::default(),
                        talon: None,
                    }),
                    Err(e) => report.fail("deal", ev.line, e),
                }
            } else if let Some(m) = ev.payload::<tpb::CardsDealt>() {
                match (m, hands.last_mut()) {
                    (Ok(d), Some(h)) if d.hand == h.started.hand => {
                        match h.dealt.get_mut(d.position as usize) {
                            Some(slot @ None) => *slot = Some((ev.line, d)),
                            _ => report.fail(
                                "deal",
                                ev.line,
                                format!("position {} dealt twice or out of range", d.position),
                            ),
                        }
                    }
                    (Ok(d), _) => report.fail(
                        "deal",
                        ev.line,
                        format!("CardsDealt of hand {} outside its hand", d.hand),
                    ),
                    (Err(e), _) => report.fail("deal", ev.line, e),
                }
            } else if let Some(m) = ev.payload::<tpb::TalonDealt>() {
                match (m, hands.last_mut()) {
                    (Ok(t), Some(h)) if t.hand == h.started.hand && h.talon.is_none() => {
                        h.talon = Some((ev.line, t));
                    }
                    (Ok(t), _) => report.fail(
                        "deal",
                        ev.line,
                        format!("TalonDealt of hand {} outside its hand, or twice", t.hand),
                    ),
                    (Err(e), _) => report.fail("deal", ev.line, e),
                }
            }
        }
        hands
    }

    /// The client seed recomputed from the contributions and the delayed value, checked
    /// against every place that records it.
    fn client_seed(
        &self,
        report: &mut Report,
        published: &[(usize, cpb::TableCommitmentPublished)],
        hands: &[HandRecord],
        dealt: &[(usize, dpb::HandDealt)],
        reveals: &[(usize, tpb::TableSeedRevealed)],
    ) -> String {
        let mut contributions: BTreeMap<u32, String> = BTreeMap::new();
        for (line, m) in Self::all::<cpb::SeedContributed>(report, "client_seed", &self.others) {
            if contributions.insert(m.seat, m.contribution).is_some() {
                report.fail(
                    "client_seed",
                    line,
                    format!("seat {} contributed twice", m.seat),
                );
            }
        }
        // The table records the same contributions.
        for (line, m) in Self::all::<tpb::SeedContributed>(report, "client_seed", &self.table) {
            report.check(
                "client_seed",
                line,
                match contributions.get(&m.seat) {
                    Some(c) if *c == m.contribution => Ok(()),
                    Some(c) => Err(format!(
                        "seat {}'s contribution is {:?} here, {c:?} at the commitment service",
                        m.seat, m.contribution
                    )),
                    None => Err(format!(
                        "seat {}'s contribution is not recorded by the commitment service",
                        m.seat
                    )),
                },
            );
        }
        let bound = Self::all::<cpb::DelayedValueBound>(report, "client_seed", &self.others);
        let delayed = bound
            .iter()
            .find(|(_, m)| m.subject_id == self.header.table_id)
            .map(|(_, m)| m.value.clone());
        if let Some((line, p)) = published.first()
            && !p.delayed_source.is_empty()
            && delayed.is_none()
        {
            report.fail(
                "client_seed",
                *line,
                format!(
                    "the commitment names delayed source {:?} but no value was bound",
                    p.delayed_source
                ),
            );
        }
        let client_seed = table_client_seed(&contributions, delayed.as_deref());
        let hash = contributions_hash(&contributions);
        let expect =
            |report: &mut Report, line: usize, what: &str, recorded: &str, wanted: &str| {
                report.check(
                    "client_seed",
                    line,
                    if recorded == wanted {
                        Ok(())
                    } else {
                        Err(format!(
                            "{what} is {recorded:?}, the contributions give {wanted:?}"
                        ))
                    },
                );
            };
        let fixed = Self::all::<cpb::ClientSeedFixed>(report, "client_seed", &self.others);
        if fixed.is_empty() && !hands.is_empty() {
            report.fail("client_seed", 0, "no ClientSeedFixed event");
        }
        for (line, m) in &fixed {
            expect(
                report,
                *line,
                "ClientSeedFixed.client_seed",
                &m.client_seed,
                &client_seed,
            );
            expect(
                report,
                *line,
                "ClientSeedFixed.contributions_hash",
                &m.contributions_hash,
                &hash,
            );
        }
        for h in hands {
            expect(
                report,
                h.line,
                "HandStarted.client_seed",
                &h.started.client_seed,
                &client_seed,
            );
        }
        for (line, m) in dealt {
            expect(
                report,
                *line,
                "HandDealt.client_seed",
                &m.client_seed,
                &client_seed,
            );
        }
        for (line, m) in reveals {
            expect(
                report,
                *line,
                "TableSeedRevealed.client_seed",
                &m.client_seed,
                &client_seed,
            );
        }
        client_seed
    }

    /// Hand `h` re-dealt from the seeds, against what each seat got and the dealing record.
    fn deal(
        &self,
        report: &mut Report,
        layout: Layout,
        seed: &str,
        client_seed: &str,
        h: &HandRecord,
        dealt: &[(usize, dpb::HandDealt)],
    ) {
        let salt = h.started.hand.to_string();
        report.check(
            "deal",
            h.line,
            if h.started.salt == salt {
                Ok(())
            } else {
                Err(format!(
                    "hand {}'s salt is {:?}, expected {salt:?}",
                    h.started.hand, h.started.salt
                ))
            },
        );
        let deal = Deal::from_seeds(layout.deck, seed, client_seed, &salt);
        let shown = |cards: &[u8]| deal.codes(cards).join(" ");
        for (position, slot) in h.dealt.iter().enumerate() {
            let Some((line, d)) = slot else {
                if position < layout.seats {
                    report.fail(
                        "deal",
                        h.line,
                        format!(
                            "hand {}: no CardsDealt at position {position}",
                            h.started.hand
                        ),
                    );
                }
                continue;
            };
            let Some(wanted) = deal.hands.get(position).filter(|_| position < layout.seats) else {
                report.fail(
                    "deal",
                    *line,
                    format!("position {position}: the table has {} seats", layout.seats),
                );
                continue;
            };
            let to_seat =
                dealer(&h.started).map(|dealer| dealer.offset(1 + position, layout.seats));
            let result = match to_seat {
                Err(e) => Err(e),
                Ok(s) if u32::from(s.number()) != d.seat => Err(format!(
                    "position {position} goes to seat {}, recorded seat {}",
                    s.number(),
                    d.seat
                )),
                Ok(_) if d.cards != deal.codes(wanted) => Err(format!(
                    "seat {} was dealt [{}], the seeds deal [{}]",
                    d.seat,
                    d.cards.join(" "),
                    shown(wanted)
                )),
                Ok(_) => Ok(()),
            };
            report.check("deal", *line, result);
        }
        match (&h.talon, deal.chien.is_empty()) {
            (None, true) => {}
            (None, false) => report.fail(
                "deal",
                h.line,
                format!("hand {}: no TalonDealt", h.started.hand),
            ),
            (Some((line, _)), true) => {
                report.fail("deal", *line, "a talon, where the deck deals none");
            }
            (Some((line, t)), false) => report.check(
                "deal",
                *line,
                if t.cards == deal.codes(&deal.chien) {
                    Ok(())
                } else {
                    Err(format!(
                        "the talon is [{}], the seeds deal [{}]",
                        t.cards.join(" "),
                        shown(&deal.chien)
                    ))
                },
            ),
        }
        let number = deal.distribution_number().to_string();
        match dealt
            .iter()
            .find(|(_, m)| m.hand == u64::from(h.started.hand))
        {
            None => report.fail(
                "deal",
                h.line,
                format!("no HandDealt for hand {}", h.started.hand),
            ),
            Some((line, m)) => report.check(
                "deal",
                *line,
                if m.distribution_number != number {
                    Err(format!(
                        "distribution number {}, the seeds give {number}",
                        m.distribution_number
                    ))
                } else if m.salt != salt {
                    Err(format!("salt {:?}, expected {salt:?}", m.salt))
                } else {
                    Ok(())
                },
            ),
        }
    }

    /// Every move through the rules engine, then the result and the ratings.
    fn replay<G: WireGame>(&self, report: &mut Report, layout: Layout, hands: &[HandRecord]) {
        let mut log: Vec<G::Event> = Vec::new();
        let mut lines: Vec<usize> = Vec::new();
        let mut hand_iter = hands.iter();
        for ev in &self.table {
            if ev.payload::<tpb::HandStarted>().is_some() {
                let Some(h) = hand_iter.next() else { continue };
                match h.dealt::<G>(layout.seats) {
                    Ok(dealt) => {
                        log.push(G::deal_event(dealt));
                        lines.push(h.line);
                    }
                    Err(e) => report.fail("replay", h.line, e),
                }
                continue;
            }
            match engine_event::<G>(ev) {
                None => {}
                Some(Ok(event)) => {
                    if matches!(G::command_of(&event), Some((Actor::Seat(_), _))) {
                        report.moves += 1;
                    }
                    log.push(event);
                    lines.push(ev.line);
                }
                Some(Err(e)) => report.fail("replay", ev.line, e),
            }
        }
        let line_of = |i: usize| lines.get(i).copied().unwrap_or(0);
        let game = match G::verify(&log) {
            Ok(game) => {
                report.check("replay", lines.first().copied().unwrap_or(0), Ok(()));
                report.check("score", 0, Ok(()));
                Some(game)
            }
            Err(VerifyError::Refused { index, error }) => {
                report.fail("replay", line_of(index), format!("illegal: {error}"));
                None
            }
            Err(VerifyError::Unexpected { index, kind }) => {
                report.fail(
                    "replay",
                    line_of(index),
                    format!("{kind} does not follow from the events before it"),
                );
                None
            }
            Err(VerifyError::Mismatch { index, expected }) => {
                // The first event that differs from what the rules produce (the command's
                // own event, or one that follows it: a trick, a score, the match).
                let offset = expected
                    .iter()
                    .zip(log.get(index..).unwrap_or_default())
                    .position(|(wanted, logged)| wanted != logged)
                    .unwrap_or(0);
                let index = index + offset;
                let expected = expected.get(offset..).unwrap_or_default();
                let recorded = log.get(index);
                // A game names its scoring `hand_scored` and its end `match_won`.
                let check = match recorded.map(G::kind) {
                    Some("hand_scored") => "score",
                    Some("match_won") => "result",
                    _ => "replay",
                };
                report.fail(
                    check,
                    line_of(index),
                    format!(
                        "recorded {:?}, the rules give {:?}",
                        recorded,
                        expected.first()
                    ),
                );
                None
            }
        };
        let finished = Self::all::<tpb::GameFinished>(report, "result", &self.table);
        let Some((line, finished)) = finished.into_iter().next() else {
            self.expired(report, game.as_ref());
            return;
        };
        if let Some(game) = &game {
            let outcome = game.outcome();
            let scores = outcome
                .as_ref()
                .map(|o| o.scores.clone())
                .unwrap_or_default();
            let winner = outcome
                .as_ref()
                .and_then(|o| o.winners().next())
                .and_then(|side| u32::try_from(side).ok());
            let hands_played = game.hands_dealt() as usize;
            let mut problems = Vec::new();
            if finished.final_scores != scores {
                problems.push(format!(
                    "final scores {:?}, the rules give {scores:?}",
                    finished.final_scores
                ));
            }
            if Some(finished.winner) != winner {
                problems.push(format!(
                    "winner {}, the rules give {winner:?}",
                    finished.winner
                ));
            }
            if finished.hands_played as usize != hands_played {
                problems.push(format!(
                    "hands played {}, the log has {hands_played}",
                    finished.hands_played
                ));
            }
            report.check("result", line, verdict(&problems));
        }
        self.seats(report, line, &finished);
        self.ratings(report, &finished);
    }

    /// A table that ended at its latest end instead of finishing (`TableExpired`, checked
    /// under `result`): it had a latest end, the commitment's; it expired no earlier than
    /// that; the rules had not ended the match; it records the hands dealt; nothing was
    /// played after it; and nobody was rated for it (`rating`).
    fn expired<G: TableGame>(&self, report: &mut Report, game: Option<&G>) {
        let expired = Self::all::<tpb::TableExpired>(report, "result", &self.table);
        let Some((line, m)) = expired.into_iter().next() else {
            report.fail(
                "result",
                0,
                "no GameFinished or TableExpired: the game did not end",
            );
            return;
        };
        let mut problems = Vec::new();
        let latest_end = Self::all::<tpb::TableCreated>(report, "result", &self.table)
            .first()
            .map_or(0, |(_, created)| created.latest_end_ms);
        if latest_end == 0 {
            problems.push("the table expired, but TableCreated sets no latest end".to_owned());
        } else if m.latest_end_ms != latest_end {
            problems.push(format!(
                "latest end {} ms, TableCreated's is {latest_end} ms",
                m.latest_end_ms
            ));
        }
        let promised = Self::all::<cpb::TableCommitmentPublished>(report, "result", &self.others)
            .first()
            .map(|(_, p)| i128::from(p.timelock_latest_end) * 1000);
        if promised != Some(i128::from(latest_end)) {
            problems.push(format!(
                "the table's latest end {latest_end} ms is not the commitment's ({})",
                promised.map_or("none".to_owned(), |p| format!("{p} ms"))
            ));
        }
        let at_ms = self
            .table
            .iter()
            .find(|ev| ev.line == line)
            .and_then(|ev| ev.env.occurred_at.as_ref())
            .map(|ts| i128::from(ts.seconds) * 1000 + i128::from(ts.nanos) / 1_000_000);
        match at_ms {
            Some(at) if at >= i128::from(m.latest_end_ms) => {}
            Some(at) => problems.push(format!(
                "expired at {at} ms, before its latest end {} ms",
                m.latest_end_ms
            )),
            None => problems.push("TableExpired has no time".to_owned()),
        }
        if let Some(game) = game {
            if game.outcome().is_some() {
                problems.push("the table expired, but by the rules its match was over".into());
            }
            if game.hands_dealt() != m.hands_dealt {
                problems.push(format!(
                    "hands dealt {}, the log has {}",
                    m.hands_dealt,
                    game.hands_dealt()
                ));
            }
        }
        for ev in self.table.iter().filter(|ev| ev.line > line) {
            let allowed = ev.payload::<tpb::TableSeedRevealed>().is_some()
                || ev.payload::<tpb::SpectatorJoined>().is_some()
                || ev.payload::<tpb::SpectatorLeft>().is_some();
            if !allowed {
                problems.push(format!(
                    "line {}: {} after the table expired",
                    ev.line, ev.env.event_type
                ));
            }
        }
        report.check("result", line, verdict(&problems));
        for (rated, change) in Self::all::<rpb::RatingChanged>(report, "rating", &self.others) {
            report.fail(
                "rating",
                rated,
                format!(
                    "player {} is rated for a table that expired unfinished",
                    change.player_id
                ),
            );
        }
    }

    /// GameFinished's players are the ones who sat.
    fn seats(&self, report: &mut Report, line: usize, finished: &tpb::GameFinished) {
        let mut holders: HashMap<u32, String> = HashMap::new();
        for ev in &self.table {
            if let Some(Ok(m)) = ev.payload::<tpb::SeatTaken>() {
                holders.insert(m.seat, m.player_id);
            } else if let Some(Ok(m)) = ev.payload::<tpb::SeatLeft>() {
                holders.remove(&m.seat);
            }
        }
        let mut problems = Vec::new();
        for p in &finished.players {
            let sat = holders.get(&p.seat).cloned().unwrap_or_default();
            if !p.bot && sat != p.player_id {
                problems.push(format!(
                    "seat {} is {:?} in GameFinished, {:?} sat there",
                    p.seat, p.player_id, sat
                ));
            }
        }
        report.check("result", line, verdict(&problems));
    }

    /// Every RatingChanged recomputed.
    fn ratings(&self, report: &mut Report, finished: &tpb::GameFinished) {
        let changes = Self::all::<rpb::RatingChanged>(report, "rating", &self.others);
        if changes.is_empty() {
            return;
        }
        let sides = Sides::of(finished);
        let players: HashMap<&str, &tpb::SeatPlayer> = finished
            .players
            .iter()
            .filter(|p| !p.bot && !p.player_id.is_empty())
            .map(|p| (p.player_id.as_str(), p))
            .collect();
        let before: HashMap<&str, f64> = changes
            .iter()
            .map(|(_, m)| (m.player_id.as_str(), m.rating_before))
            .collect();
        let mut seen = BTreeSet::new();
        for (line, m) in &changes {
            report.ratings += 1;
            report.check(
                "rating",
                *line,
                self.rating(m, finished, &players, &before, &sides),
            );
            if !seen.insert(m.player_id.as_str()) {
                report.fail(
                    "rating",
                    *line,
                    format!("player {} is rated twice", m.player_id),
                );
            }
        }
        for id in players.keys() {
            if !seen.contains(id) {
                report.fail(
                    "rating",
                    0,
                    format!("player {id} played but has no RatingChanged"),
                );
            }
        }
    }

    fn rating(
        &self,
        m: &rpb::RatingChanged,
        finished: &tpb::GameFinished,
        players: &HashMap<&str, &tpb::SeatPlayer>,
        before: &HashMap<&str, f64>,
        sides: &Sides,
    ) -> Result<(), String> {
        let who = &m.player_id;
        if m.table_id != self.header.table_id {
            return Err(format!("{who}: table {}, not this game", m.table_id));
        }
        let player = players
            .get(who.as_str())
            .ok_or_else(|| format!("{who} did not play this game"))?;
        let score = match sides {
            Sides::Teams => {
                let team_of = |seat: u32| seat % 2;
                let won = team_of(player.seat) == finished.winner && !player.abandoned;
                let score = if won { Score::Win } else { Score::Loss };
                for o in &m.opponents {
                    let theirs = players.get(o.player_id.as_str());
                    if theirs.is_none_or(|p| team_of(p.seat) == team_of(player.seat)) {
                        return Err(format!(
                            "{who}: opponent {} was not on the other team",
                            o.player_id
                        ));
                    }
                }
                score
            }
            Sides::EachAlone { placings } => {
                // Every other seat is an opponent, once; the score is the mean of the
                // player's results against them (a loss if they abandoned).
                let mut theirs = BTreeSet::new();
                for o in &m.opponents {
                    let seat = players
                        .get(o.player_id.as_str())
                        .map(|p| p.seat)
                        .filter(|seat| *seat != player.seat && placings.contains_key(seat));
                    if !seat.is_some_and(|seat| theirs.insert(seat)) {
                        return Err(format!(
                            "{who}: opponent {} is not another player of the game, once",
                            o.player_id
                        ));
                    }
                }
                if theirs.len() + 1 != placings.len() {
                    return Err(format!(
                        "{who}: {} opponents, the game has {} other players",
                        theirs.len(),
                        placings.len().saturating_sub(1)
                    ));
                }
                let mine = placings
                    .get(&player.seat)
                    .copied()
                    .ok_or_else(|| format!("{who}: seat {} has no final score", player.seat))?;
                if player.abandoned {
                    Score::Loss
                } else {
                    placing_score(mine, theirs.iter().filter_map(|s| placings.get(s).copied()))
                        .map_err(|e| format!("{who}: {e}"))?
                }
            }
        };
        if m.score.to_bits() != score.value().to_bits() {
            return Err(format!(
                "{who}: score {}, the game gives {}",
                m.score,
                score.value()
            ));
        }
        for o in &m.opponents {
            if let Some(b) = before.get(o.player_id.as_str())
                && b.to_bits() != o.rating_before.to_bits()
            {
                return Err(format!(
                    "{who}: opponent {}'s rating before is {:?}, their own record says {b:?}",
                    o.player_id, o.rating_before
                ));
            }
        }
        let rating = |v: f64| Rating::new(v).map_err(|e| format!("{who}: {e}"));
        let recorded = RecordedChange {
            before: rating(m.rating_before)?,
            opponents: Opponents::new(
                m.opponents
                    .iter()
                    .map(|o| rating(o.rating_before))
                    .collect::<Result<_, _>>()?,
            )
            .map_err(|e| format!("{who}: opponents: {e}"))?,
            score,
            k: KFactor::new(m.k).map_err(|e| format!("{who}: {e}"))?,
            expectation: m.expectation,
            after: m.rating_after,
        };
        let change = recorded
            .verify(Exactness::Bits)
            .map_err(|e| format!("{who}: {e}"))?;
        for (o, w) in m.opponents.iter().zip(change.weights()) {
            if o.weight.to_bits() != w.to_bits() {
                return Err(format!(
                    "{who}: opponent {}'s weight {:?}, SPEC 6 gives {w:?}",
                    o.player_id, o.weight
                ));
            }
        }
        if m.games_played == 0 {
            return Err(format!("{who}: games_played 0 after a rated game"));
        }
        Ok(())
    }
}

/// How a game's players face each other, for the rating check.
enum Sides {
    /// Jeu du 10: teams {0, 2} and {1, 3}; a player's opponents are the other team.
    Teams,
    /// French Tarot: every seat its own side, placed by its final score (equal scores
    /// sharing a placing); a player's opponents are all the other seats.
    EachAlone {
        /// Each seat's placing (1 is first).
        placings: HashMap<u32, Placing>,
    },
}

impl Sides {
    /// The sides of `finished`: a Tarot game's when its options name Tarot.
    fn of(finished: &tpb::GameFinished) -> Sides {
        if finished.variant.as_ref().is_none_or(|v| v.tarot.is_none()) {
            return Sides::Teams;
        }
        let scores = &finished.final_scores;
        let placings = finished
            .players
            .iter()
            .filter_map(|p| {
                let mine = scores.get(usize::try_from(p.seat).ok()?)?;
                let above = scores.iter().filter(|other| *other > mine).count();
                Some((p.seat, 1 + u32::try_from(above).ok()?))
            })
            .collect();
        Sides::EachAlone { placings }
    }
}

#[path = "audit_drand.rs"]
mod drand;

#[path = "audit_timelock.rs"]
mod timelock;

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
