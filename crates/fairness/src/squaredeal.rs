//! The SquareDeal procedure (Hans van Staveren's `squaredeal.pl` 2.5, as used by the WBF
//! and EBL): files, key checks and the seeds of each session. Pure: the caller reads and
//! writes the files; the one impure function, [`generate_session_key`], reads the OS
//! CSPRNG.
//!
//! The procedure (SPEC section 4, "Tournament sets"):
//! 1. The organiser describes the tournament in a `.sqd` file (name `TN`, the public
//!    delayed information to come `DI`, one `SN` line per phase) and publishes it: one
//!    secret 60-character key per session goes to the `.sqk` key file, and the key file's
//!    SHA-256 goes to the `.sqd` as `KH`. The `.sqd` is made public; the `.sqk` stays secret.
//! 2. Once the delayed information is public (a stock index close, a lottery draw), its
//!    value is recorded as `DV` and the boards are made: session key `k` gives
//!    `owner = k[..len/2]` and `entropy = k[len/2..] || base64(DV) || "original"` (or
//!    `"reserve"`), and the session's boards are the first B numbers of the BigDeal stream
//!    of `(entropy, owner)` ([`crate::bigdeal`]), B the session's board count.
//! 3. After the event the `.sqk` is published; anyone checks it against `KH` and regenerates
//!    every board.
//!
//! Where the project's issue text and `squaredeal.pl` differ, this module follows the Perl
//! source (the files and boards it made are the ones to match):
//! - **Key hash.** `readkeys` reads the `.sqk` through Perl's `:crlf` layer and hashes its
//!   lines re-joined with CR LF, not the raw bytes. A key file whose line ends were turned
//!   into LF (by a mail client or git) therefore still verifies, as it does with
//!   squaredeal; [`KeyFile::is_exact_crlf`] tells whether the bytes were untouched.
//!   Files squaredeal or fairdeal write are CR LF throughout, so both readings agree on them.
//! - **Base64.** The delayed value is encoded with `Convert::Base64`, i.e. standard base64
//!   with padding and without line breaks, of the value's bytes (UTF-8 here).
//! - **Board specifications.** squaredeal translates `2x16` into `1-16,17-32` when a phase
//!   is added and stores the translation; a `2x16` typed into a `.sqd` by hand would be
//!   misread by the Perl script (it passes it to BigDeal, whose `atoi` reads 2 boards).
//!   fairdeal reads `AxB` in a file as the issue asks and always writes the translation.
//!   A board count `?` (decided later) is kept; boards are then made with an explicit spec.
//! - **Strictness.** squaredeal ignores lines it does not know and lets a later line
//!   override an earlier one; fairdeal rejects unknown tags, duplicate `TN`/`DI`/`DV`/`KH`
//!   lines, duplicate or undeclared session keys, so an auditor never reads a file two ways.
//!
//! Limits squaredeal does not have, so that a hostile file cannot make a verifier loop for
//! hours: at most [`MAX_SESSIONS`] sessions per phase and [`MAX_BOARDS_PER_SESSION`]
//! boards per session (real events use fewer than 100 of each).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::bigdeal::{self, Board, Seed};

/// The squaredeal version whose files this module reads and writes.
pub const SQUAREDEAL_VERSION: &str = "2.5";
/// Length of the session keys squaredeal generates (357 bits of entropy).
pub const KEY_LEN: usize = 60;
/// The characters of a generated key, in squaredeal's order (`a..z`, `A..Z`, `0..9`).
pub const KEY_ALPHABET: &[u8; 62] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/// squaredeal warns about keys shorter than this.
pub const SHORT_KEY: usize = 40;
/// Most sessions one phase may have.
pub const MAX_SESSIONS: u32 = 10_000;
/// Most boards one session may have.
pub const MAX_BOARDS_PER_SESSION: u32 = 10_000;
/// Largest board number (BigDeal's `MAXDEALS` for `bigdealx`).
pub const MAX_BOARD_NUMBER: u32 = 1_000_000_000;

// ---------------------------------------------------------------------------------------
// Board specifications
// ---------------------------------------------------------------------------------------

/// A range of board numbers, `first..=last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoardRange {
    /// The first board number (at least 1).
    pub first: u32,
    /// The last board number (at least `first`).
    pub last: u32,
}

impl BoardRange {
    /// Number of boards in the range.
    pub const fn count(self) -> u32 {
        self.last - self.first + 1
    }
}

impl fmt::Display for BoardRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// Why a board specification is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoardSpecError {
    /// Nothing where a specification was expected.
    #[error("empty board specification")]
    Empty,
    /// An item that is neither `n`, `a-b` nor (alone) `AxB`.
    #[error("{0:?} is not a board count (16), a range (17-32) or a repetition (2x16)")]
    NotARange(String),
    /// Board 0 or a count of 0.
    #[error("{0:?}: board numbers and counts start at 1")]
    Zero(String),
    /// `a-b` with `b < a`.
    #[error("{0:?} is a decreasing range")]
    Decreasing(String),
    /// A number past [`MAX_BOARD_NUMBER`], or a session past [`MAX_BOARDS_PER_SESSION`].
    #[error(
        "{0:?} is too large (at most {MAX_BOARDS_PER_SESSION} boards a session, board numbers up to {MAX_BOARD_NUMBER})"
    )]
    TooLarge(String),
}

/// The boards of each session of a phase (the second field of an `SN` line).
///
/// `16` means boards 1-16 in every session; `1-16,17-32` gives session 1 boards 1-16,
/// session 2 boards 17-32, session 3 boards 1-16 again, and so on; `2x16` is
/// `1-16,17-32`; `?` means "decided when the boards are made".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardSpec {
    /// The text written to the `.sqd` (an `AxB` form already translated).
    text: String,
    /// The ranges cycled through by session; `None` for `?`.
    ranges: Option<Vec<BoardRange>>,
}

impl BoardSpec {
    /// The ranges, `None` when the spec is `?`.
    pub fn ranges(&self) -> Option<&[BoardRange]> {
        self.ranges.as_deref()
    }

    /// The boards of session `session` (1-based), cycling through the ranges; `None` for
    /// `?` or session 0.
    pub fn for_session(&self, session: u32) -> Option<BoardRange> {
        let ranges = self.ranges.as_ref()?;
        let len = u32::try_from(ranges.len()).ok()?;
        let index = session.checked_sub(1)? % len.max(1);
        ranges.get(usize::try_from(index).ok()?).copied()
    }
}

impl fmt::Display for BoardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for BoardSpec {
    type Err = BoardSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(BoardSpecError::Empty);
        }
        if s == "?" {
            return Ok(BoardSpec {
                text: s.to_owned(),
                ranges: None,
            });
        }
        if let Some((sessions, length)) = s.split_once(['x', 'X']) {
            // squaredeal's translate_session_length: ^([1-9][0-9]*)x([1-9][0-9]*)$.
            let sessions = count(sessions, s)?;
            let length = count(length, s)?;
            let mut ranges = Vec::new();
            for i in 0..sessions {
                let first = i
                    .checked_mul(length)
                    .and_then(|b| b.checked_add(1))
                    .ok_or_else(|| BoardSpecError::TooLarge(s.to_owned()))?;
                ranges.push(range(first, first.saturating_add(length - 1), s)?);
            }
            let text = ranges
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",");
            return Ok(BoardSpec {
                text,
                ranges: Some(ranges),
            });
        }
        let mut ranges = Vec::new();
        for item in s.split(',') {
            let item = item.trim();
            let parsed = match item.split_once('-') {
                Some((first, last)) => range(number(first, item)?, number(last, item)?, item)?,
                None => range(1, count(item, item)?, item)?,
            };
            ranges.push(parsed);
        }
        Ok(BoardSpec {
            text: s.to_owned(),
            ranges: Some(ranges),
        })
    }
}

/// A decimal number of at most 10 digits (no sign, no spaces).
fn number(digits: &str, item: &str) -> Result<u32, BoardSpecError> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BoardSpecError::NotARange(item.to_owned()));
    }
    digits
        .parse::<u32>()
        .map_err(|_| BoardSpecError::TooLarge(item.to_owned()))
}

/// A positive number.
fn count(digits: &str, item: &str) -> Result<u32, BoardSpecError> {
    match number(digits, item)? {
        0 => Err(BoardSpecError::Zero(item.to_owned())),
        n => Ok(n),
    }
}

/// A checked range `first..=last`.
fn range(first: u32, last: u32, item: &str) -> Result<BoardRange, BoardSpecError> {
    if first == 0 {
        return Err(BoardSpecError::Zero(item.to_owned()));
    }
    if last < first {
        return Err(BoardSpecError::Decreasing(item.to_owned()));
    }
    if last > MAX_BOARD_NUMBER || last - first >= MAX_BOARDS_PER_SESSION {
        return Err(BoardSpecError::TooLarge(item.to_owned()));
    }
    Ok(BoardRange { first, last })
}

// ---------------------------------------------------------------------------------------
// Phases and sessions
// ---------------------------------------------------------------------------------------

/// Why an `SN` line (or a phase being added) is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhaseError {
    /// Not `nsessions:boards:prefix:description`.
    #[error("expected nsessions:boards:file-prefix:description, found {0} fields")]
    Fields(usize),
    /// The session count is not a number from 1 to [`MAX_SESSIONS`].
    #[error("session count {0:?} is not a number from 1 to {MAX_SESSIONS}")]
    Sessions(String),
    /// The board specification is invalid.
    #[error("boards: {0}")]
    Boards(#[from] BoardSpecError),
    /// The file prefix breaks squaredeal's rules.
    #[error(
        "file prefix {0:?} must be a letter followed by letters, digits, '#', '_' or '-', with at most one run of '#'"
    )]
    Prefix(String),
    /// Two phases with one file prefix.
    #[error("file prefix {prefix:?} is already used by phase {phase}")]
    PrefixUsed {
        /// The prefix.
        prefix: String,
        /// The phase using it.
        phase: usize,
    },
    /// An empty description.
    #[error("the description is empty")]
    EmptyDescription,
}

/// One phase of the tournament (an `SN` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// Number of sessions.
    pub sessions: u32,
    /// The boards of each session.
    pub boards: BoardSpec,
    /// Output file prefix; its run of `#` becomes the session number.
    pub prefix: String,
    /// Session description; its run of `#` becomes the session number.
    pub description: String,
}

impl Phase {
    /// Reads the value of an `SN` line.
    pub fn parse(value: &str) -> Result<Self, PhaseError> {
        let fields: Vec<&str> = value.split(':').collect();
        // squaredeal's split drops trailing empty fields: an empty description may be absent.
        let (sessions, boards, prefix, description) = match fields.as_slice() {
            [s, b, p, d] => (*s, *b, *p, *d),
            [s, b, p] => (*s, *b, *p, ""),
            other => return Err(PhaseError::Fields(other.len())),
        };
        Ok(Phase {
            sessions: parse_sessions(sessions)?,
            boards: boards.parse()?,
            prefix: prefix.to_owned(),
            description: description.to_owned(),
        })
    }

    /// The value of this phase's `SN` line.
    pub fn to_sn(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.sessions, self.boards, self.prefix, self.description
        )
    }
}

fn parse_sessions(text: &str) -> Result<u32, PhaseError> {
    let bad = || PhaseError::Sessions(text.to_owned());
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_SESSIONS).contains(&n) => Ok(n),
        _ => Err(bad()),
    }
}

/// squaredeal's `sharpfill`: the first run of `#` in `template` becomes `n`, zero-padded to
/// the run's length (`rr##`, 9 gives `rr09`; `#/17`, 3 gives `3/17`).
pub fn sharpfill(template: &str, n: u32) -> String {
    match template.find('#') {
        None => template.to_owned(),
        Some(start) => {
            let run = template
                .get(start..)
                .map_or(0, |rest| rest.bytes().take_while(|&b| b == b'#').count());
            let before = template.get(..start).unwrap_or("");
            let after = template.get(start + run..).unwrap_or("");
            format!("{before}{n:0run$}{after}")
        }
    }
}

/// Which set of a session is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetKind {
    /// The boards played.
    Original,
    /// The reserve set, for a board fouled or lost.
    Reserve,
}

impl SetKind {
    /// The word appended to the entropy: `original` or `reserve`.
    pub const fn word(self) -> &'static str {
        match self {
            SetKind::Original => "original",
            SetKind::Reserve => "reserve",
        }
    }
}

/// One session of one phase, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Phase number (1-based).
    pub phase: u32,
    /// Session number within the phase (1-based).
    pub session: u32,
    /// The boards of this session.
    pub boards: BoardRange,
    /// The file prefix with the session number filled in (squaredeal's output file name,
    /// `reserve` appended for a reserve set).
    pub file_prefix: String,
    /// The description with the session number filled in.
    pub description: String,
}

// ---------------------------------------------------------------------------------------
// The description file (.sqd)
// ---------------------------------------------------------------------------------------

/// The SHA-256 of a key file, as written in the `KH` line (64 lowercase hex digits).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash(pub [u8; 32]);

impl fmt::Display for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyHash({self})")
    }
}

/// A `KH` value that is not 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key hash {0:?} is not 64 lowercase hex digits")]
pub struct BadKeyHash(pub String);

impl FromStr for KeyHash {
    type Err = BadKeyHash;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadKeyHash(s.to_owned());
        // squaredeal compares the hex strings exactly, so upper case would never match.
        if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(s, &mut bytes).map_err(|_| bad())?;
        Ok(KeyHash(bytes))
    }
}

/// What is wrong with one line of a `.sqd` file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqdLineProblem {
    /// The line is not UTF-8.
    #[error("not valid UTF-8")]
    NotUtf8,
    /// A tag squaredeal does not write.
    #[error("unknown line {0:?} (expected TN, DI, DV, SN, KH or a # comment)")]
    UnknownTag(String),
    /// A second `TN`, `DI`, `DV` or `KH` line.
    #[error("second {tag} line (the first is line {first})")]
    Duplicate {
        /// The tag.
        tag: &'static str,
        /// Line of the first one.
        first: usize,
    },
    /// A tag without a value.
    #[error("{0} has no value")]
    Empty(&'static str),
    /// A bad `SN` line.
    #[error("SN: {0}")]
    Phase(#[from] PhaseError),
    /// A bad `KH` line.
    #[error("KH: {0}")]
    KeyHash(#[from] BadKeyHash),
}

/// Why a `.sqd` file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqdError {
    /// A bad line.
    #[error("line {line}: {problem}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: SqdLineProblem,
    },
    /// A required line is missing.
    #[error("no {0} line")]
    Missing(&'static str),
}

/// A tournament description (the `.sqd` file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tournament {
    /// `TN`: the tournament's name (identification only, no effect on the boards).
    pub name: String,
    /// `DI`: the description of the delayed information, fixed before publication.
    pub delayed_info: String,
    /// `DV`: the delayed information's value, once known.
    pub delayed_value: Option<String>,
    /// `SN` lines, phase 1 first.
    pub phases: Vec<Phase>,
    /// `KH`: the key file's hash; present once published.
    pub key_hash: Option<KeyHash>,
}

/// Splits a file into numbered lines without their line ends (LF or CR LF).
fn numbered_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let empty = bytes.is_empty();
    body.split(|&b| b == b'\n')
        .filter(move |_| !empty)
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .enumerate()
        .map(|(i, line)| (i + 1, line))
}

impl Tournament {
    /// Reads a `.sqd` file. Lines are read as squaredeal's `readtourn` does (trailing
    /// white space dropped, `#` lines are comments, the tag followed by spaces), but see the
    /// module notes on strictness.
    pub fn parse(bytes: &[u8]) -> Result<Self, SqdError> {
        let mut name = None;
        let mut delayed_info = None;
        let mut delayed_value = None;
        let mut key_hash = None;
        let mut phases = Vec::new();
        // A byte order mark (Windows editors add one) is not part of the first line.
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        for (line, raw) in numbered_lines(bytes) {
            let at = |problem: SqdLineProblem| SqdError::Line { line, problem };
            let text = std::str::from_utf8(raw).map_err(|_| at(SqdLineProblem::NotUtf8))?;
            let text = text.trim_end();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let (tag, value) = match text.split_at_checked(2) {
                Some((tag, rest)) if rest.is_empty() || rest.starts_with(' ') => {
                    (tag, rest.trim_start_matches(' '))
                }
                _ => return Err(at(SqdLineProblem::UnknownTag(text.to_owned()))),
            };
            let (tag, slot) = match tag {
                "TN" => ("TN", &mut name),
                "DI" => ("DI", &mut delayed_info),
                "DV" => ("DV", &mut delayed_value),
                "KH" => {
                    if let Some((_, first)) = key_hash {
                        return Err(at(SqdLineProblem::Duplicate { tag: "KH", first }));
                    }
                    key_hash = Some((value.parse::<KeyHash>().map_err(|e| at(e.into()))?, line));
                    continue;
                }
                "SN" => {
                    phases.push(Phase::parse(value).map_err(|e| at(e.into()))?);
                    continue;
                }
                _ => return Err(at(SqdLineProblem::UnknownTag(text.to_owned()))),
            };
            if let Some((_, first)) = slot {
                return Err(at(SqdLineProblem::Duplicate { tag, first: *first }));
            }
            if value.is_empty() {
                return Err(at(SqdLineProblem::Empty(tag)));
            }
            *slot = Some((value.to_owned(), line));
        }
        let tournament = Tournament {
            name: name.ok_or(SqdError::Missing("TN (tournament name)"))?.0,
            delayed_info: delayed_info
                .ok_or(SqdError::Missing("DI (delayed information description)"))?
                .0,
            delayed_value: delayed_value.map(|(v, _)| v),
            phases,
            key_hash: key_hash.map(|(h, _)| h),
        };
        if tournament.key_hash.is_some() && tournament.phases.is_empty() {
            return Err(SqdError::Missing("SN (phase) in a published file"));
        }
        Ok(tournament)
    }

    /// Whether the tournament is published (has a key hash).
    pub const fn is_published(&self) -> bool {
        self.key_hash.is_some()
    }

    /// The total number of sessions over all phases.
    pub fn session_count(&self) -> u64 {
        self.phases.iter().map(|p| u64::from(p.sessions)).sum()
    }

    /// The `.sqd` text as squaredeal's `writetourn` lays it out.
    pub fn to_sqd(&self) -> String {
        let mut out = format!(
            "# Description file of tournament for program SquareDeal {SQUAREDEAL_VERSION} (written by fairdeal)\n#\n"
        );
        out.push_str(&format!("TN {}\n", self.name));
        out.push_str(&format!("DI {}\n", self.delayed_info));
        if let Some(value) = &self.delayed_value {
            out.push_str(&format!("DV {value}\n"));
        }
        out.push_str("# Description of phases of tournament\n");
        out.push_str("# Per phase a line with SN nessions:nboards:filename:description\n");
        for phase in &self.phases {
            out.push_str(&format!("SN {}\n", phase.to_sn()));
        }
        match &self.key_hash {
            Some(hash) => out.push_str(&format!("KH {hash}\n")),
            None => out.push_str("#\n# Until published this file may be edited if so wished\n"),
        }
        out
    }

    /// Session `session` of phase `phase` (both 1-based) with its boards; `boards`
    /// overrides the phase's specification (required when it is `?`).
    pub fn session(
        &self,
        phase: u32,
        session: u32,
        set: SetKind,
        boards: Option<&BoardSpec>,
    ) -> Result<Session, SessionError> {
        let phase_def = usize::try_from(phase)
            .ok()
            .and_then(|p| p.checked_sub(1))
            .and_then(|p| self.phases.get(p))
            .ok_or(SessionError::NoSuchPhase {
                phase,
                phases: self.phases.len(),
            })?;
        if session == 0 || session > phase_def.sessions {
            return Err(SessionError::NoSuchSession {
                phase,
                session,
                sessions: phase_def.sessions,
            });
        }
        let spec = boards.unwrap_or(&phase_def.boards);
        let range = spec
            .for_session(session)
            .ok_or(SessionError::BoardsUnknown { phase })?;
        let mut file_prefix = sharpfill(&phase_def.prefix, session);
        if set == SetKind::Reserve {
            file_prefix.push_str("reserve");
        }
        Ok(Session {
            phase,
            session,
            boards: range,
            file_prefix,
            description: sharpfill(&phase_def.description, session),
        })
    }
}

/// Why a session cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// No such phase.
    #[error("phase {phase} does not exist (the tournament has {phases} phases)")]
    NoSuchPhase {
        /// The phase asked for.
        phase: u32,
        /// How many there are.
        phases: usize,
    },
    /// No such session.
    #[error("session {session} does not exist (phase {phase} has {sessions} sessions)")]
    NoSuchSession {
        /// The phase.
        phase: u32,
        /// The session asked for.
        session: u32,
        /// How many the phase has.
        sessions: u32,
    },
    /// The phase's board count is `?` and none was given.
    #[error(
        "phase {phase} has its board count left open (?): give the boards of the session explicitly"
    )]
    BoardsUnknown {
        /// The phase.
        phase: u32,
    },
    /// The delayed value is not recorded yet.
    #[error("the description has no DV line: the delayed value must be recorded first")]
    NoDelayedValue,
    /// The key file has no key for the session.
    #[error("no key for session {phase},{session}")]
    NoKey {
        /// Phase.
        phase: u32,
        /// Session.
        session: u32,
    },
}

// ---------------------------------------------------------------------------------------
// The key file (.sqk)
// ---------------------------------------------------------------------------------------

/// A session key. Secret until the event is over: `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey(String);

impl fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionKey({} characters)", self.0.len())
    }
}

/// A key that cannot be a session key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadSessionKey {
    /// Empty.
    #[error("the key is empty")]
    Empty,
    /// A character that is not printable ASCII, or a `:`. (The key itself is not shown.)
    #[error("the key has a character at position {0} that is not printable ASCII (or is ':')")]
    Character(usize),
}

impl SessionKey {
    /// Checks a key: non-empty printable ASCII without `:` (squaredeal makes
    /// `[A-Za-z0-9]`; it passes keys through a shell, so nothing exotic can have worked).
    pub fn new(key: &str) -> Result<Self, BadSessionKey> {
        if key.is_empty() {
            return Err(BadSessionKey::Empty);
        }
        if let Some(position) = key.bytes().position(|b| !b.is_ascii_graphic() || b == b':') {
            return Err(BadSessionKey::Character(position + 1));
        }
        Ok(SessionKey(key.to_owned()))
    }

    /// The key.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Number of characters.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Keys are never empty; present for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The two halves, split at `len / 2` (rounded down): the owner string and the head of
    /// the entropy.
    pub fn halves(&self) -> (&str, &str) {
        // ASCII only, so every index is a character boundary.
        self.0.split_at(self.0.len() / 2)
    }
}

/// What is wrong with one line of a `.sqk` file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqkLineProblem {
    /// Not `phase,session:key`.
    #[error("expected phase,session:key")]
    Shape,
    /// The part before `:` is not two positive numbers. (Not shown: a line written the
    /// wrong way round would put the key there.)
    #[error("the part before ':' is not phase,session with positive numbers")]
    SessionId,
    /// The key is not acceptable.
    #[error("session {phase},{session}: {problem}")]
    Key {
        /// Phase.
        phase: u32,
        /// Session.
        session: u32,
        /// What is wrong.
        problem: BadSessionKey,
    },
    /// A second key for one session.
    #[error("second key for session {phase},{session} (the first is line {first})")]
    Duplicate {
        /// Phase.
        phase: u32,
        /// Session.
        session: u32,
        /// Line of the first key.
        first: usize,
    },
}

/// Why a `.sqk` file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct SqkError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub problem: SqkLineProblem,
}

/// A key file (the `.sqk`): one key per session, and its hash.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyFile {
    /// Keys by (phase, session), with the line they came from.
    keys: BTreeMap<(u32, u32), (SessionKey, usize)>,
    /// SHA-256 of the lines joined with CR LF (what squaredeal compares with `KH`).
    hash: KeyHash,
    /// Whether the file's bytes are exactly that CR LF form.
    exact_crlf: bool,
}

impl fmt::Debug for KeyFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyFile")
            .field("keys", &self.keys.len())
            .field("hash", &self.hash)
            .finish_non_exhaustive()
    }
}

/// The key hash of a key file as squaredeal computes it: SHA-256 of its lines, each
/// followed by CR LF (a file already in that form hashes as its raw bytes).
pub fn key_hash(bytes: &[u8]) -> KeyHash {
    let mut hasher = Sha256::new();
    for (_, line) in numbered_lines(bytes) {
        hasher.update(line);
        hasher.update(b"\r\n");
    }
    KeyHash(hasher.finalize().into())
}

impl KeyFile {
    /// Reads a key file. Blank lines carry no key (they still count in the hash, as in
    /// squaredeal).
    pub fn parse(bytes: &[u8]) -> Result<Self, SqkError> {
        let mut keys = BTreeMap::new();
        for (line, raw) in numbered_lines(bytes) {
            let at = |problem: SqkLineProblem| SqkError { line, problem };
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = std::str::from_utf8(raw).map_err(|_| at(SqkLineProblem::Shape))?;
            let (id, key) = text.split_once(':').ok_or(at(SqkLineProblem::Shape))?;
            let bad_id = || at(SqkLineProblem::SessionId);
            let (phase, session) = id.split_once(',').ok_or_else(bad_id)?;
            let phase = positive(phase).ok_or_else(bad_id)?;
            let session = positive(session).ok_or_else(bad_id)?;
            let key = SessionKey::new(key).map_err(|problem| {
                at(SqkLineProblem::Key {
                    phase,
                    session,
                    problem,
                })
            })?;
            if let Some((_, first)) = keys.get(&(phase, session)) {
                return Err(at(SqkLineProblem::Duplicate {
                    phase,
                    session,
                    first: *first,
                }));
            }
            keys.insert((phase, session), (key, line));
        }
        let hash = key_hash(bytes);
        let exact_crlf = Sha256::digest(bytes).as_slice() == hash.0.as_slice();
        Ok(KeyFile {
            keys,
            hash,
            exact_crlf,
        })
    }

    /// The hash squaredeal compares with `KH`.
    pub const fn hash(&self) -> KeyHash {
        self.hash
    }

    /// Whether the bytes are exactly the CR LF form that was hashed (true for files
    /// squaredeal and fairdeal write; false if line ends were converted since).
    pub const fn is_exact_crlf(&self) -> bool {
        self.exact_crlf
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the file holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key of a session.
    pub fn key(&self, phase: u32, session: u32) -> Option<&SessionKey> {
        self.keys.get(&(phase, session)).map(|(key, _)| key)
    }

    /// The key file text for `keys` in phase, session order, CR LF line ends (squaredeal's
    /// `writekeys`).
    pub fn to_bytes(keys: &[((u32, u32), SessionKey)]) -> Vec<u8> {
        let mut out = Vec::new();
        for ((phase, session), key) in keys {
            out.extend_from_slice(format!("{phase},{session}:").as_bytes());
            out.extend_from_slice(key.expose().as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out
    }
}

fn positive(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|&n| n > 0)
}

// ---------------------------------------------------------------------------------------
// Verification and making sessions
// ---------------------------------------------------------------------------------------

/// Why a key file does not belong to a description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The description has no `KH`: nothing was committed.
    #[error("the description has no KH line: the tournament was never published")]
    NotPublished,
    /// The key file is not the one committed to.
    #[error(
        "key hash mismatch: the description's KH is {described}, the key file hashes to {actual}"
    )]
    KeyHashMismatch {
        /// `KH` of the description.
        described: KeyHash,
        /// Hash of the key file.
        actual: KeyHash,
    },
    /// A session without a key.
    #[error("no key for session {phase},{session}")]
    MissingKey {
        /// Phase.
        phase: u32,
        /// Session.
        session: u32,
    },
    /// A key for a session the description does not have.
    #[error(
        "line {line}: key for session {phase},{session}, which the description does not declare"
    )]
    UndeclaredKey {
        /// Phase.
        phase: u32,
        /// Session.
        session: u32,
        /// Its line in the key file.
        line: usize,
    },
}

/// A description and a key file that were checked to belong together: the only way to get
/// at the seeds of the sessions.
#[derive(Debug, Clone, Copy)]
pub struct Verified<'a> {
    /// The description.
    tournament: &'a Tournament,
    /// Its key file.
    keys: &'a KeyFile,
}

/// Checks a key file against a description: `KH` matches, and there is exactly one key
/// for every declared session.
pub fn verify<'a>(
    tournament: &'a Tournament,
    keys: &'a KeyFile,
) -> Result<Verified<'a>, VerifyError> {
    let described = tournament.key_hash.ok_or(VerifyError::NotPublished)?;
    if described != keys.hash {
        return Err(VerifyError::KeyHashMismatch {
            described,
            actual: keys.hash,
        });
    }
    for (&(phase, session), (_, line)) in &keys.keys {
        let declared = usize::try_from(phase)
            .ok()
            .and_then(|p| p.checked_sub(1))
            .and_then(|p| tournament.phases.get(p))
            .is_some_and(|p| session <= p.sessions);
        if !declared {
            return Err(VerifyError::UndeclaredKey {
                phase,
                session,
                line: *line,
            });
        }
    }
    // Every key is declared and keys are unique, so equal counts mean none is missing;
    // only when they differ is the missing one looked for.
    if tournament.session_count() != keys.keys.len() as u64 {
        for (phase, def) in (1u32..).zip(&tournament.phases) {
            for session in 1..=def.sessions {
                if !keys.keys.contains_key(&(phase, session)) {
                    return Err(VerifyError::MissingKey { phase, session });
                }
            }
        }
    }
    Ok(Verified { tournament, keys })
}

/// The boards of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionBoards {
    /// The session.
    pub session: Session,
    /// Original or reserve.
    pub set: SetKind,
    /// The boards, in board-number order.
    pub boards: Vec<Board>,
}

/// The BigDeal entropy of a session: the key's second half, base64 of the delayed value,
/// and `original` or `reserve`, concatenated (squaredeal's three `-e` arguments).
pub fn session_entropy(key: &SessionKey, delayed_value: &str, set: SetKind) -> String {
    let (_, tail) = key.halves();
    let encoded = base64::engine::general_purpose::STANDARD.encode(delayed_value.as_bytes());
    format!("{tail}{encoded}{}", set.word())
}

/// The BigDeal seed of a session (owner: the key's first half, squaredeal's `-W`).
pub fn session_seed(key: &SessionKey, delayed_value: &str, set: SetKind) -> Seed {
    let (owner, _) = key.halves();
    Seed::new(
        session_entropy(key, delayed_value, set).as_bytes(),
        owner.as_bytes(),
    )
}

impl<'a> Verified<'a> {
    /// The description.
    pub const fn tournament(&self) -> &'a Tournament {
        self.tournament
    }

    /// The key file.
    pub const fn keys(&self) -> &'a KeyFile {
        self.keys
    }

    /// Things squaredeal warns about that do not stop verification: short keys, a key
    /// file whose line ends were converted.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if !self.keys.exact_crlf {
            warnings.push(
                "the key file's line ends are not all CR LF: it was hashed with CR LF line ends, as squaredeal does".to_owned(),
            );
        }
        for (&(phase, session), (key, _)) in &self.keys.keys {
            if key.len() < SHORT_KEY {
                warnings.push(format!(
                    "short key for session {phase},{session} ({} characters)",
                    key.len()
                ));
            }
        }
        warnings
    }

    /// Makes the boards of a session (the first B numbers of its stream, B its board
    /// count, numbered by its range). `boards` overrides the phase's specification.
    pub fn make(
        &self,
        phase: u32,
        session: u32,
        set: SetKind,
        boards: Option<&BoardSpec>,
    ) -> Result<SessionBoards, SessionError> {
        let session = self.tournament.session(phase, session, set, boards)?;
        let delayed_value = self
            .tournament
            .delayed_value
            .as_deref()
            .ok_or(SessionError::NoDelayedValue)?;
        // `verify` checked that every declared session has a key.
        let key = self
            .keys
            .key(phase, session.session)
            .ok_or(SessionError::NoKey {
                phase,
                session: session.session,
            })?;
        let seed = session_seed(key, delayed_value, set);
        let boards = bigdeal::boards(&seed, session.boards.first, session.boards.count());
        Ok(SessionBoards {
            session,
            set,
            boards,
        })
    }
}

/// The PBN of a session: BigDeal's layout, `Event` = `<TN>: <session description>`
/// (` (reserve)` appended for a reserve set) where BigDeal writes `?`.
pub fn session_pbn(tournament: &Tournament, boards: &SessionBoards, generator: &str) -> String {
    let mut out = bigdeal::pbn_header(generator);
    out.push_str(&boards_pbn(tournament, boards));
    out
}

/// The PBN boards of a session without the file header (to concatenate sessions).
pub fn boards_pbn(tournament: &Tournament, boards: &SessionBoards) -> String {
    let mut event = format!("{}: {}", tournament.name, boards.session.description);
    if boards.set == SetKind::Reserve {
        event.push_str(" (reserve)");
    }
    let mut out = String::with_capacity(boards.boards.len() * 400);
    for board in &boards.boards {
        board.write_pbn(&event, &mut out);
    }
    out
}

// ---------------------------------------------------------------------------------------
// The organiser's side
// ---------------------------------------------------------------------------------------

/// Why an organiser's step was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrganiserError {
    /// A step that must come before publication.
    #[error("the tournament is already published: its phases can no longer change")]
    AlreadyPublished,
    /// A step that must come after publication.
    #[error("the tournament is not published yet (publish it first)")]
    NotPublished,
    /// An empty name, description or value.
    #[error("{0} is empty")]
    Empty(&'static str),
    /// A line break in a one-line field.
    #[error("{0} must be a single line")]
    Multiline(&'static str),
    /// A bad phase.
    #[error(transparent)]
    Phase(#[from] PhaseError),
    /// Publishing without phases.
    #[error("no phases have been added: add at least one before publishing")]
    NoPhases,
    /// The wrong number of keys for publication.
    #[error("{got} keys for {expected} sessions")]
    KeyCount {
        /// Sessions in the tournament.
        expected: u64,
        /// Keys supplied.
        got: usize,
    },
    /// The delayed value was already recorded with another value.
    #[error(
        "the delayed value is already recorded as {recorded:?}; changing it would change every board"
    )]
    DelayedValueSet {
        /// The recorded value.
        recorded: String,
    },
}

/// A one-line text field, trimmed (squaredeal drops trailing white space when reading).
fn one_line(value: &str, field: &'static str) -> Result<String, OrganiserError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(OrganiserError::Empty(field));
    }
    if value.contains(['\n', '\r']) {
        return Err(OrganiserError::Multiline(field));
    }
    Ok(value.to_owned())
}

impl Tournament {
    /// A new, unpublished tournament.
    pub fn new(name: &str, delayed_info: &str) -> Result<Self, OrganiserError> {
        Ok(Tournament {
            name: one_line(name, "the tournament name")?,
            delayed_info: one_line(delayed_info, "the delayed information description")?,
            delayed_value: None,
            phases: Vec::new(),
            key_hash: None,
        })
    }

    /// Adds a phase as squaredeal's `addphase` does: `AxB` boards are translated; with more
    /// than one session, a prefix or description without `#` gets the session number
    /// appended (`#` runs as wide as the session count, ` #/N` to the description); `:` is
    /// removed from the description.
    pub fn add_phase(
        &mut self,
        sessions: u32,
        boards: &str,
        prefix: &str,
        description: &str,
    ) -> Result<&Phase, OrganiserError> {
        if self.is_published() {
            return Err(OrganiserError::AlreadyPublished);
        }
        if !(1..=MAX_SESSIONS).contains(&sessions) {
            return Err(PhaseError::Sessions(sessions.to_string()).into());
        }
        let boards: BoardSpec = boards.parse().map_err(PhaseError::from)?;
        let mut prefix = prefix.trim().to_owned();
        if !valid_prefix(&prefix) {
            return Err(PhaseError::Prefix(prefix).into());
        }
        if sessions != 1 && !prefix.contains('#') {
            prefix.push_str(&"#".repeat(sessions.to_string().len()));
        }
        if let Some(phase) = self.phases.iter().position(|p| p.prefix == prefix) {
            return Err(PhaseError::PrefixUsed {
                prefix,
                phase: phase + 1,
            }
            .into());
        }
        let mut description = one_line(description, "the phase description")
            .map_err(|_| PhaseError::EmptyDescription)?
            .replace(':', "");
        if description.trim().is_empty() {
            return Err(PhaseError::EmptyDescription.into());
        }
        if sessions != 1 && !description.contains('#') {
            description.push_str(&format!(" #/{sessions}"));
        }
        self.phases.push(Phase {
            sessions,
            boards,
            prefix,
            description,
        });
        self.phases.last().ok_or(OrganiserError::NoPhases)
    }

    /// Publishes: takes one key per session (phase by phase, session by session; see
    /// [`generate_session_key`]), records the key hash, and returns the key file to keep
    /// secret.
    pub fn publish(&mut self, keys: Vec<SessionKey>) -> Result<Vec<u8>, OrganiserError> {
        if self.is_published() {
            return Err(OrganiserError::AlreadyPublished);
        }
        if self.phases.is_empty() {
            return Err(OrganiserError::NoPhases);
        }
        let expected = self.session_count();
        if keys.len() as u64 != expected {
            return Err(OrganiserError::KeyCount {
                expected,
                got: keys.len(),
            });
        }
        let ids = (1u32..)
            .zip(&self.phases)
            .flat_map(|(phase, def)| (1..=def.sessions).map(move |session| (phase, session)));
        let numbered: Vec<((u32, u32), SessionKey)> = ids.zip(keys).collect();
        let bytes = KeyFile::to_bytes(&numbered);
        self.key_hash = Some(key_hash(&bytes));
        Ok(bytes)
    }

    /// Records the delayed value (trimmed, as squaredeal's `getDV`). Setting the same value
    /// again is allowed; changing it is refused.
    pub fn set_delayed_value(&mut self, value: &str) -> Result<(), OrganiserError> {
        if !self.is_published() {
            return Err(OrganiserError::NotPublished);
        }
        let value = one_line(value, "the delayed value")?;
        match &self.delayed_value {
            Some(recorded) if *recorded != value => Err(OrganiserError::DelayedValueSet {
                recorded: recorded.clone(),
            }),
            _ => {
                self.delayed_value = Some(value);
                Ok(())
            }
        }
    }
}

/// squaredeal's prefix rule: `^[a-zA-Z][a-zA-Z0-9#_\-]*$` and a single run of `#`.
fn valid_prefix(prefix: &str) -> bool {
    let mut bytes = prefix.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphabetic());
    let rest_ok = prefix
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'#' | b'_' | b'-'));
    let runs = prefix
        .as_bytes()
        .windows(2)
        .filter(|w| w.first() != Some(&b'#') && w.get(1) == Some(&b'#'))
        .count();
    first_ok && rest_ok && runs <= 1
}

/// Appends key characters drawn from random bytes to `key` until it holds [`KEY_LEN`]:
/// bytes 248..=255 are rejected so that each of the 62 characters is equally likely
/// (`248 = 4 * 62`). Returns whether the key is complete.
pub fn push_key_characters(key: &mut String, random: &[u8]) -> bool {
    for &byte in random {
        if key.len() >= KEY_LEN {
            break;
        }
        if byte < 248
            && let Some(&c) = KEY_ALPHABET.get(usize::from(byte % 62))
        {
            key.push(char::from(c));
        }
    }
    key.len() >= KEY_LEN
}

/// Why a key could not be generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the OS random number generator failed: {0}")]
pub struct KeyGenerationError(pub getrandom::Error);

/// A fresh 60-character session key from the OS CSPRNG (squaredeal uses
/// `Bytes::Random::Secure`). The crate's only other impure function besides the server
/// seed generator.
pub fn generate_session_key() -> Result<SessionKey, KeyGenerationError> {
    let mut key = String::with_capacity(KEY_LEN);
    let mut buffer = [0u8; 2 * KEY_LEN];
    loop {
        getrandom::fill(&mut buffer).map_err(KeyGenerationError)?;
        if push_key_characters(&mut key, &buffer) {
            break;
        }
    }
    // Characters come from KEY_ALPHABET only.
    Ok(SessionKey(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_specs_cycle_per_session() {
        let spec: BoardSpec = "1-16,17-32".parse().unwrap();
        let first = |s| spec.for_session(s).map(|r| (r.first, r.last));
        assert_eq!(first(1), Some((1, 16)));
        assert_eq!(first(2), Some((17, 32)));
        assert_eq!(first(3), Some((1, 16)));
        assert_eq!(first(0), None);
        let single: BoardSpec = "16".parse().unwrap();
        assert_eq!(
            single.for_session(5),
            Some(BoardRange { first: 1, last: 16 })
        );
        assert_eq!(single.to_string(), "16");
        let repeated: BoardSpec = "3x7".parse().unwrap();
        assert_eq!(repeated.to_string(), "1-7,8-14,15-21");
        assert_eq!(
            repeated.for_session(3),
            Some(BoardRange {
                first: 15,
                last: 21
            })
        );
        let open: BoardSpec = "?".parse().unwrap();
        assert_eq!(open.for_session(1), None);
    }

    #[test]
    fn bad_board_specs_are_named() {
        for (spec, expected) in [
            ("", BoardSpecError::Empty),
            ("0", BoardSpecError::Zero("0".into())),
            ("5-3", BoardSpecError::Decreasing("5-3".into())),
            ("1-", BoardSpecError::NotARange("1-".into())),
            ("a", BoardSpecError::NotARange("a".into())),
            ("0x16", BoardSpecError::Zero("0x16".into())),
            ("1-99999", BoardSpecError::TooLarge("1-99999".into())),
            (
                "99999999999",
                BoardSpecError::TooLarge("99999999999".into()),
            ),
        ] {
            assert_eq!(spec.parse::<BoardSpec>(), Err(expected), "{spec:?}");
        }
    }

    #[test]
    fn sharpfill_pads_the_first_run() {
        assert_eq!(sharpfill("OPRR##", 1), "OPRR01");
        assert_eq!(
            sharpfill("Open Round Robin #/17", 12),
            "Open Round Robin 12/17"
        );
        assert_eq!(sharpfill("R16#", 3), "R163");
        assert_eq!(sharpfill("plain", 3), "plain");
        assert_eq!(sharpfill("a#b##", 7), "a7b##");
    }

    #[test]
    fn prefixes_follow_squaredeal() {
        assert!(valid_prefix("OPRR##"));
        assert!(valid_prefix("rr_1-#"));
        assert!(!valid_prefix("1rr"));
        assert!(!valid_prefix("rr#x#"));
        assert!(!valid_prefix("r r"));
        assert!(!valid_prefix(""));
    }

    #[test]
    fn key_characters_reject_the_biased_tail() {
        let mut key = String::new();
        assert!(!push_key_characters(&mut key, &[0, 61, 62, 247, 248, 255]));
        assert_eq!(key, "a9a9");
        let mut full = String::new();
        assert!(push_key_characters(&mut full, &[1u8; 100]));
        assert_eq!(full.len(), KEY_LEN);
    }

    #[test]
    fn generated_keys_use_the_alphabet() {
        let a = generate_session_key().unwrap();
        let b = generate_session_key().unwrap();
        assert_eq!(a.len(), KEY_LEN);
        assert!(a.expose().bytes().all(|c| KEY_ALPHABET.contains(&c)));
        assert_ne!(a, b);
        assert!(!format!("{a:?}").contains(a.expose()));
    }

    #[test]
    fn a_byte_order_mark_is_ignored() {
        let parsed = Tournament::parse(b"\xEF\xBB\xBF# SquareDeal 2.5\nTN T\nDI D\n").unwrap();
        assert_eq!(parsed.name, "T");
    }

    #[test]
    fn key_halves_split_at_half_length_rounded_down() {
        let key = SessionKey::new("abcde").unwrap();
        assert_eq!(key.halves(), ("ab", "cde"));
    }

    #[test]
    fn session_entropy_is_tail_base64_and_word() {
        let key = SessionKey::new("OWNERtail").unwrap();
        assert_eq!(
            session_entropy(&key, "43275.91", SetKind::Reserve),
            "RtailNDMyNzUuOTE=reserve"
        );
    }

    #[test]
    fn key_hash_normalises_line_ends_like_readkeys() {
        let crlf = b"1,1:abc\r\n1,2:def\r\n";
        let lf = b"1,1:abc\n1,2:def\n";
        let no_final = b"1,1:abc\r\n1,2:def";
        assert_eq!(key_hash(crlf), key_hash(lf));
        assert_eq!(key_hash(crlf), key_hash(no_final));
        assert_eq!(key_hash(crlf).0.as_slice(), Sha256::digest(crlf).as_slice());
        assert!(KeyFile::parse(crlf).unwrap().is_exact_crlf());
        assert!(!KeyFile::parse(lf).unwrap().is_exact_crlf());
    }
}
