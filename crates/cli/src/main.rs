//! `fairdeal`: the offline verifier.
//!
//! Every subcommand writes JSON to stdout, one object per line (or a human-readable walk
//! through with `--explain`, or PBN for boards); errors go to stderr as one line and the
//! process exits with status 2. Each subcommand lives in its own module with its clap
//! arguments and a `run` function; this file only dispatches.
#![forbid(unsafe_code)]

mod audit_cmd;
mod client_seed;
mod commit;
mod deal;
mod demo;
mod drand;
mod duplicate;
mod error;
mod number;
mod outcome;
mod rating;
mod squaredeal;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// Re-derive provably-fair deals and outcomes from seeds, and rating changes, offline.
#[derive(Debug, Parser)]
#[command(name = "fairdeal", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Deal from seeds (one line per salt) or from a distribution number.
    Deal(deal::DealArgs),
    /// The distribution number of a dealt order.
    Number(number::NumberArgs),
    /// The result of a single-round game (dice, double, x50, jackpot, crash, overgo, mines, tower, slot, plinko).
    Outcome(outcome::OutcomeArgs),
    /// The commitment (SHA-256) and short code of a server seed.
    Commit(commit::CommitArgs),
    /// A fresh server seed from the OS CSPRNG, with its commitment.
    Seed,
    /// A table's client seed from its players' contributions and the delayed value.
    ClientSeed(client_seed::ClientSeedArgs),
    /// Tarot duplicate selection: the accepted deal and every rejected candidate with its reason.
    Duplicate(duplicate::DuplicateArgs),
    /// BigDeal-compatible bridge boards and the SquareDeal procedure.
    #[command(subcommand)]
    Squaredeal(squaredeal::SquaredealCommand),
    /// One rating change (SPEC 6) recomputed from its inputs: before, after, expectation, weights.
    Rating(rating::RatingArgs),
    /// A finished game's export from the ledger, checked offline: proofs, chains, seeds, deals, moves, scores, ratings.
    Audit(audit_cmd::AuditArgs),
    /// A verification walk-through: a fresh seed, its commitment, a real deal and its number.
    Demo,
    /// drand quicknet rounds offline: verify a round's signature, open a timelocked ciphertext.
    #[command(subcommand)]
    Drand(drand::DrandCommand),
}

fn run(cli: Cli, out: &mut dyn Write) -> Result<(), CliError> {
    match cli.command {
        Command::Deal(args) => deal::run(args, out),
        Command::Number(args) => number::run(args, out),
        Command::Outcome(args) => outcome::run(args, out),
        Command::Commit(args) => commit::run_commit(args, out),
        Command::Seed => commit::run_seed(out),
        Command::ClientSeed(args) => client_seed::run(args, out),
        Command::Duplicate(args) => duplicate::run(args, out),
        Command::Squaredeal(cmd) => squaredeal::run(cmd, out),
        Command::Rating(args) => rating::run(args, out),
        Command::Audit(args) => audit_cmd::run(args, out),
        Command::Demo => demo::run(out),
        Command::Drand(cmd) => drand::run(cmd, out),
    }
}

/// The first paragraph of a clap error on one line: clap puts the names of missing
/// arguments on lines of their own, and usage and tips after a blank line.
fn one_line(rendered: &str) -> String {
    let first = rendered.split("\n\n").next().unwrap_or_default();
    first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // Usage errors: one line naming the problem, exit 2 (as every other error).
            let _ = writeln!(std::io::stderr(), "{}", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
        Err(e) => {
            // Help and version go to stdout with success.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = run(cli, &mut out).and_then(|()| out.flush().map_err(CliError::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`fairdeal deal ... | head`) is a normal way to stop reading.
        Err(CliError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        // A failed audit printed its findings: status 1, as documented.
        Err(e @ CliError::AuditFailed(_)) => {
            let _ = out.flush();
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(2)
        }
    }
}
