//! `fairdeal squaredeal ...`: the SquareDeal procedure with BigDeal-compatible boards.
//!
//! The auditor's side: `verify` (the key file is the one committed to by `KH`), `make`
//! (regenerate a session's boards as PBN, LIN or JSON) and `check` (compare an official PBN
//! file with the regenerated boards). The organiser's side: `new`, `add-phase`, `publish`
//! (generates the secret keys and writes `KH`), `set-dv`.
//!
//! A drand round as the delayed information: `set-dv`, `verify`, `make` and `check` take
//! `--drand-round R --drand-signature S [--drand-randomness X] [--drand-chain FILE]`. The
//! round's signature is verified against the chain (quicknet, built in, or the chain-info file)
//! and its randomness (lowercase hex) is the delayed value: `set-dv` records it as `DV`; the
//! auditor's commands use it when the description has no `DV` yet, and otherwise refuse a
//! `DV` that is not it. `verify` warns when the description's `DI` does not name round `R`.
//!
//! This module does the file IO; parsing, checks and dealing are in
//! `fairdeal_fairness::squaredeal` and `::bigdeal`. Every error names the file (and the line
//! when there is one).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ArgGroup;
use fairdeal_fairness::bigdeal::{self, BridgeDeal};
use fairdeal_fairness::squaredeal::{
    self, BoardSpec, KeyFile, SessionBoards, SetKind, Tournament, Verified,
};
use serde_json::json;

use crate::drand::{DrandRoundArgs, VerifiedRound};
use crate::error::{CliError, quoted};

/// The PBN `Generator` value.
const GENERATOR: &str = concat!(
    "fairdeal ",
    env!("CARGO_PKG_VERSION"),
    " (BigDeal-compatible, SquareDeal)"
);

/// The SquareDeal subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SquaredealCommand {
    /// Check a key file against the description's key hash (KH) and its sessions.
    Verify(VerifyArgs),
    /// Regenerate the boards of one or more sessions.
    Make(MakeArgs),
    /// Compare an official PBN file with the regenerated boards of its session(s).
    Check(CheckArgs),
    /// Organiser: create a tournament description.
    New(NewArgs),
    /// Organiser: add a phase (before publishing).
    AddPhase(AddPhaseArgs),
    /// Organiser: generate the session keys, write the key file and the key hash.
    Publish(FilesArgs),
    /// Organiser: record the delayed information's value once it is public.
    SetDv(SetDvArgs),
}

/// The description file and its key file.
#[derive(Debug, clap::Args)]
pub(crate) struct FilesArgs {
    /// The tournament description (.sqd).
    #[arg(long)]
    sqd: PathBuf,
    /// The key file (.sqk); defaults to the description's path with the extension .sqk.
    #[arg(long)]
    sqk: Option<PathBuf>,
}

impl FilesArgs {
    fn sqk_path(&self) -> PathBuf {
        self.sqk
            .clone()
            .unwrap_or_else(|| self.sqd.with_extension("sqk"))
    }
}

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    files: FilesArgs,
    /// A drand round as the delayed value (checked against `DV` when the file has one).
    #[command(flatten)]
    drand: DrandRoundArgs,
}

/// Output formats of `make`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Portable Bridge Notation, BigDeal's tags (Event filled in).
    Pbn,
    /// BBO's LIN, one board a line, as BigDeal writes it.
    Lin,
    /// One JSON object a line.
    Json,
}

/// Which boards: phase, sessions, set.
#[derive(Debug, clap::Args)]
pub(crate) struct SelectionArgs {
    /// Phase number (1 = the first SN line).
    #[arg(long)]
    phase: u32,
    /// Session number, a range such as 3-7, or `all`.
    #[arg(long)]
    session: String,
    /// Make the reserve set instead of the original.
    #[arg(long)]
    reserve: bool,
    /// Board specification overriding the phase's (needed when it is `?`), e.g. 1-16.
    #[arg(long)]
    boards: Option<String>,
}

/// Arguments of `make`.
#[derive(Debug, clap::Args)]
pub(crate) struct MakeArgs {
    #[command(flatten)]
    files: FilesArgs,
    #[command(flatten)]
    selection: SelectionArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "pbn")]
    format: Format,
    /// A drand round as the delayed value (checked against `DV` when the file has one).
    #[command(flatten)]
    drand: DrandRoundArgs,
}

/// Arguments of `check`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    files: FilesArgs,
    #[command(flatten)]
    selection: SelectionArgs,
    /// The PBN file to check (its Board and Deal tags, in order).
    #[arg(long)]
    pbn: PathBuf,
    /// A drand round as the delayed value (checked against `DV` when the file has one).
    #[command(flatten)]
    drand: DrandRoundArgs,
}

/// Arguments of `new`.
#[derive(Debug, clap::Args)]
pub(crate) struct NewArgs {
    /// The description file to create (.sqd); an existing file is not overwritten.
    #[arg(long)]
    sqd: PathBuf,
    /// Tournament name (TN).
    #[arg(long)]
    name: String,
    /// Which public value, not yet known, will be used (DI), e.g. "DJIA close of 1 June 2026".
    #[arg(long)]
    delayed_info: String,
}

/// Arguments of `add-phase`.
#[derive(Debug, clap::Args)]
pub(crate) struct AddPhaseArgs {
    /// The description file (.sqd).
    #[arg(long)]
    sqd: PathBuf,
    /// Number of sessions.
    #[arg(long)]
    sessions: u32,
    /// Boards per session: 16, 1-16, 1-16,17-32 (cycled by session), 2x16, or ? (later).
    #[arg(long)]
    boards: String,
    /// File prefix; a run of # becomes the session number (added if missing).
    #[arg(long)]
    prefix: String,
    /// Session description; a run of # becomes the session number (" #/N" added if missing).
    #[arg(long)]
    description: String,
}

/// Arguments of `set-dv`.
#[derive(Debug, clap::Args)]
#[command(group(
    ArgGroup::new("delayed")
        .required(true)
        .args(["value", "drand_round"])
))]
pub(crate) struct SetDvArgs {
    /// The description file (.sqd).
    #[arg(long)]
    sqd: PathBuf,
    /// The delayed information's value, as published by its source.
    #[arg(long, conflicts_with = "drand_round")]
    value: Option<String>,
    /// Or a drand round, whose verified randomness is recorded as the value.
    #[command(flatten)]
    drand: DrandRoundArgs,
}

pub(crate) fn run(cmd: SquaredealCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match cmd {
        SquaredealCommand::Verify(args) => run_verify(&args, out),
        SquaredealCommand::Make(args) => run_make(&args, out),
        SquaredealCommand::Check(args) => run_check(&args, out),
        SquaredealCommand::New(args) => run_new(&args, out),
        SquaredealCommand::AddPhase(args) => run_add_phase(&args, out),
        SquaredealCommand::Publish(files) => run_publish(&files, out),
        SquaredealCommand::SetDv(args) => run_set_dv(&args, out),
    }
}

/// An error about one file: `<path>: <problem>`.
fn file_error(path: &Path, problem: impl std::fmt::Display) -> CliError {
    CliError::Invalid(format!("{}: {problem}", path.display()))
}

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    fs::read(path).map_err(|e| file_error(path, format!("cannot read: {e}")))
}

fn read_tournament(path: &Path) -> Result<Tournament, CliError> {
    Tournament::parse(&read(path)?).map_err(|e| file_error(path, e))
}

fn read_keys(path: &Path) -> Result<KeyFile, CliError> {
    KeyFile::parse(&read(path)?).map_err(|e| file_error(path, e))
}

/// Replaces a file through a temporary file in the same directory, so that a crash never
/// leaves half a description.
fn write_replace(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    fs::write(&temporary, bytes)
        .map_err(|e| file_error(&temporary, format!("cannot write: {e}")))?;
    fs::rename(&temporary, path).map_err(|e| file_error(path, format!("cannot replace: {e}")))
}

/// Creates a file that must not exist yet.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                file_error(path, "already exists; refusing to overwrite it")
            }
            _ => file_error(path, format!("cannot create: {e}")),
        })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| file_error(path, format!("cannot write: {e}")))
}

fn write_json(out: &mut dyn Write, value: &serde_json::Value) -> Result<(), CliError> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

/// The delayed value of `tournament` given `drand`'s round, verified: the round's randomness
/// becomes `DV` when the description has none; a `DV` that is not it is an error naming the
/// description and `--drand-round`.
fn with_drand_value(
    tournament: &mut Tournament,
    sqd: &Path,
    drand: &DrandRoundArgs,
) -> Result<Option<VerifiedRound>, CliError> {
    let Some(verified) = drand.verified()? else {
        return Ok(None);
    };
    match &tournament.delayed_value {
        Some(recorded) if *recorded != verified.randomness => Err(file_error(
            sqd,
            format!(
                "its DV {} is not the randomness of drand round {} (--drand-round): {}",
                quoted(recorded),
                verified.round,
                verified.randomness
            ),
        )),
        _ => {
            tournament.delayed_value = Some(verified.randomness.clone());
            Ok(Some(verified))
        }
    }
}

/// Whether `delayed_info` names round `round`: `round <round>` (any case) not followed by a
/// digit.
fn names_round(delayed_info: &str, round: u64) -> bool {
    let needle = format!("round {round}");
    let lower = delayed_info.to_ascii_lowercase();
    lower.match_indices(&needle).any(|(at, _)| {
        !lower
            .as_bytes()
            .get(at + needle.len())
            .is_some_and(u8::is_ascii_digit)
    })
}

/// Reads both files and checks that they belong together; the error names the key file on
/// a hash mismatch. With a drand round, its verified randomness is the delayed value
/// ([`with_drand_value`]).
fn with_verified<T>(
    files: &FilesArgs,
    drand: &DrandRoundArgs,
    then: impl FnOnce(Verified<'_>, Option<VerifiedRound>) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let mut tournament = read_tournament(&files.sqd)?;
    let round = with_drand_value(&mut tournament, &files.sqd, drand)?;
    let sqk = files.sqk_path();
    let keys = read_keys(&sqk)?;
    let verified = squaredeal::verify(&tournament, &keys).map_err(|e| {
        file_error(
            &sqk,
            format!("does not belong to {}: {e}", files.sqd.display()),
        )
    })?;
    then(verified, round)
}

fn run_verify(args: &VerifyArgs, out: &mut dyn Write) -> Result<(), CliError> {
    with_verified(&args.files, &args.drand, |verified, round| {
        let tournament = verified.tournament();
        let mut warnings = verified.warnings();
        if let Some(round) = &round
            && !names_round(&tournament.delayed_info, round.round)
        {
            warnings.push(format!(
                "the delayed information (DI) does not name drand round {}",
                round.round
            ));
        }
        let phases: Vec<_> = (1u32..)
            .zip(&tournament.phases)
            .map(|(number, phase)| {
                json!({
                    "phase": number,
                    "sessions": phase.sessions,
                    "boards": phase.boards.to_string(),
                    "prefix": phase.prefix,
                    "description": phase.description,
                })
            })
            .collect();
        write_json(
            out,
            &json!({
                "verified": true,
                "tournament": tournament.name,
                "delayed_info": tournament.delayed_info,
                "delayed_value": tournament.delayed_value,
                "key_hash": verified.keys().hash().to_string(),
                "sessions": verified.keys().len(),
                "phases": phases,
                "drand_round": round.map(|r| r.round),
                "warnings": warnings,
            }),
        )
    })
}

/// Sessions `n`, `a-b` or `all` of a phase with `sessions` sessions.
fn sessions(selection: &str, phase: u32, tournament: &Tournament) -> Result<Vec<u32>, CliError> {
    let count = usize::try_from(phase)
        .ok()
        .and_then(|p| p.checked_sub(1))
        .and_then(|p| tournament.phases.get(p))
        .map(|p| p.sessions)
        .ok_or_else(|| {
            CliError::arg(
                "--phase",
                format!(
                    "phase {phase} does not exist (the tournament has {} phases)",
                    tournament.phases.len()
                ),
            )
        })?;
    let bad = || CliError::arg("--session", format!("{selection:?} is not N, A-B or all"));
    let number = |text: &str| text.trim().parse::<u32>().map_err(|_| bad());
    let (first, last) = match selection.trim() {
        "all" | "*" => (1, count),
        text => match text.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(text)?;
                (n, n)
            }
        },
    };
    if first == 0 || first > last || last > count {
        return Err(CliError::arg(
            "--session",
            format!("sessions {first}-{last} do not exist (phase {phase} has {count} sessions)"),
        ));
    }
    Ok((first..=last).collect())
}

/// The boards of the selected sessions.
fn make_sessions(
    verified: Verified<'_>,
    selection: &SelectionArgs,
) -> Result<Vec<SessionBoards>, CliError> {
    let set = if selection.reserve {
        SetKind::Reserve
    } else {
        SetKind::Original
    };
    let spec: Option<BoardSpec> = selection
        .boards
        .as_deref()
        .map(|text| text.parse().map_err(|e| CliError::arg("--boards", e)))
        .transpose()?;
    sessions(&selection.session, selection.phase, verified.tournament())?
        .into_iter()
        .map(|session| {
            verified
                .make(selection.phase, session, set, spec.as_ref())
                .map_err(|e| CliError::Invalid(e.to_string()))
        })
        .collect()
}

fn run_make(args: &MakeArgs, out: &mut dyn Write) -> Result<(), CliError> {
    with_verified(&args.files, &args.drand, |verified, _| {
        let made = make_sessions(verified, &args.selection)?;
        let tournament = verified.tournament();
        match args.format {
            Format::Pbn => {
                out.write_all(bigdeal::pbn_header(GENERATOR).as_bytes())?;
                for session in &made {
                    out.write_all(squaredeal::boards_pbn(tournament, session).as_bytes())?;
                }
            }
            Format::Lin => {
                let mut text = String::new();
                for board in made.iter().flat_map(|s| &s.boards) {
                    board.write_lin(&mut text);
                }
                out.write_all(text.as_bytes())?;
            }
            Format::Json => {
                for session in &made {
                    for board in &session.boards {
                        write_json(
                            out,
                            &json!({
                                "phase": session.session.phase,
                                "session": session.session.session,
                                "set": if session.set == SetKind::Reserve { "reserve" } else { "original" },
                                "file_prefix": session.session.file_prefix,
                                "board": board.number,
                                "dealer": board.dealer().letter().to_string(),
                                "vulnerable": board.vulnerability().pbn(),
                                "deal": board.deal.pbn(),
                                "deal_number": board.deal_number.to_string(),
                            }),
                        )?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// The `(Board, Deal)` pairs of a PBN file, in order. A `Deal` is paired with the last
/// `Board` tag before it.
fn pbn_boards(path: &Path, text: &str) -> Result<Vec<(u32, BridgeDeal)>, CliError> {
    let mut boards = Vec::new();
    let mut board: Option<u32> = None;
    for (line, content) in (1usize..).zip(text.lines()) {
        let at = |problem: String| file_error(path, format!("line {line}: {problem}"));
        let content = content.trim();
        let Some(tag) = content.strip_prefix('[').and_then(|c| c.strip_suffix(']')) else {
            continue;
        };
        let Some((name, value)) = tag.split_once(' ') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        match name {
            "Board" => {
                board = Some(
                    value
                        .parse()
                        .map_err(|_| at(format!("Board {value:?} is not a number")))?,
                );
            }
            "Deal" => {
                let number = board
                    .take()
                    .ok_or_else(|| at("Deal without a Board tag before it".into()))?;
                let deal = BridgeDeal::from_pbn(value).map_err(|e| at(e.to_string()))?;
                boards.push((number, deal));
            }
            _ => {}
        }
    }
    Ok(boards)
}

fn run_check(args: &CheckArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let text = String::from_utf8(read(&args.pbn)?)
        .map_err(|_| file_error(&args.pbn, "not valid UTF-8"))?;
    let official = pbn_boards(&args.pbn, &text)?;
    with_verified(&args.files, &args.drand, |verified, _| {
        let made = make_sessions(verified, &args.selection)?;
        let regenerated: Vec<(u32, BridgeDeal)> = made
            .iter()
            .flat_map(|s| &s.boards)
            .map(|b| (b.number, b.deal))
            .collect();
        for (index, (ours, theirs)) in regenerated.iter().zip(&official).enumerate() {
            if ours != theirs {
                return Err(file_error(
                    &args.pbn,
                    format!(
                        "deal {} (board {}) is {}, but the regenerated board {} is {}",
                        index + 1,
                        theirs.0,
                        theirs.1.pbn(),
                        ours.0,
                        ours.1.pbn()
                    ),
                ));
            }
        }
        if regenerated.len() != official.len() {
            return Err(file_error(
                &args.pbn,
                format!(
                    "holds {} deals, the selected session(s) have {} boards",
                    official.len(),
                    regenerated.len()
                ),
            ));
        }
        write_json(
            out,
            &json!({ "matches": true, "boards": official.len(), "file": args.pbn.display().to_string() }),
        )
    })
}

fn run_new(args: &NewArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let tournament = Tournament::new(&args.name, &args.delayed_info)
        .map_err(|e| CliError::Invalid(e.to_string()))?;
    write_new(&args.sqd, tournament.to_sqd().as_bytes())?;
    write_json(
        out,
        &json!({ "created": args.sqd.display().to_string(), "tournament": tournament.name }),
    )
}

fn run_add_phase(args: &AddPhaseArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut tournament = read_tournament(&args.sqd)?;
    let phase = tournament
        .add_phase(args.sessions, &args.boards, &args.prefix, &args.description)
        .map_err(|e| file_error(&args.sqd, e))?
        .clone();
    write_replace(&args.sqd, tournament.to_sqd().as_bytes())?;
    write_json(
        out,
        &json!({
            "phase": tournament.phases.len(),
            "sessions": phase.sessions,
            "boards": phase.boards.to_string(),
            "prefix": phase.prefix,
            "description": phase.description,
        }),
    )
}

fn run_publish(files: &FilesArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut tournament = read_tournament(&files.sqd)?;
    if tournament.is_published() {
        return Err(file_error(
            &files.sqd,
            "is already published (it has a KH line)",
        ));
    }
    let keys = (0..tournament.session_count())
        .map(|_| squaredeal::generate_session_key())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::Invalid(e.to_string()))?;
    let sqk_bytes = tournament
        .publish(keys)
        .map_err(|e| file_error(&files.sqd, e))?;
    let sqk = files.sqk_path();
    // The keys first: a description with a KH and no key file would be unusable.
    write_new(&sqk, &sqk_bytes)?;
    write_replace(&files.sqd, tournament.to_sqd().as_bytes())?;
    write_json(
        out,
        &json!({
            "published": files.sqd.display().to_string(),
            "key_file": sqk.display().to_string(),
            "key_hash": tournament.key_hash.map(|h| h.to_string()),
            "sessions": tournament.session_count(),
            "next": "publish the .sqd now; keep the .sqk secret until the event is over",
        }),
    )
}

fn run_set_dv(args: &SetDvArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut tournament = read_tournament(&args.sqd)?;
    let round = args.drand.verified()?;
    let value = match (&round, &args.value) {
        (Some(round), _) => round.randomness.as_str(),
        (None, Some(value)) => value.as_str(),
        // clap's argument group requires one of them.
        (None, None) => return Err(CliError::arg("--value", "is required")),
    };
    tournament
        .set_delayed_value(value)
        .map_err(|e| file_error(&args.sqd, e))?;
    write_replace(&args.sqd, tournament.to_sqd().as_bytes())?;
    write_json(
        out,
        &json!({
            "delayed_info": tournament.delayed_info,
            "delayed_value": tournament.delayed_value,
            "drand_round": round.map(|r| r.round),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delayed_information_names_a_round_as_a_whole_number() {
        assert!(names_round("drand quicknet round 1000", 1000));
        assert!(names_round(
            "Drand Quicknet Round 1000, fallback 1100",
            1000
        ));
        assert!(names_round("ROUND 7.", 7));
        assert!(!names_round("drand quicknet round 10001", 1000));
        assert!(!names_round("drand quicknet round 100", 1000));
        assert!(!names_round("DJIA close of 1 June 2026", 1));
        assert!(!names_round("", 1));
    }
}
