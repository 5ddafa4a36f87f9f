//! `fairdeal deal`: re-derive deals from revealed seeds, or the deal of a distribution
//! number.
//!
//! One JSON object per deal and line. With `--count N` the salts are `T, T+1, ..`
//! (sequence numbers, as hands at a table), computed and written one at a time so memory
//! stays constant however many deals are asked for.

use std::io::{IsTerminal, Write};

use clap::ArgGroup;
use fairdeal_fairness::commitment::{Commitment, parse_sequence_salt, sequence_salt};
use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::explain::Explanation;
use fairdeal_fairness::number;
use fairdeal_fairness::{Deck, Generator};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::error::CliError;

/// Arguments of `fairdeal deal`.
#[derive(Debug, clap::Args)]
#[command(group(
    ArgGroup::new("source")
        .required(true)
        .args(["server_seed", "number"])
))]
pub(crate) struct DealArgs {
    /// The game: bridge, dix, ruff, tarot3, tarot4 or tarot5.
    #[arg(long)]
    game: String,
    /// The revealed server seed.
    #[arg(long, requires_all = ["client_seed", "salt"], allow_hyphen_values = true)]
    server_seed: Option<String>,
    /// The client seed.
    #[arg(long, requires = "server_seed", allow_hyphen_values = true)]
    client_seed: Option<String>,
    /// The salt (a hand's sequence number at a table, a round's random salt, a nonce).
    #[arg(long, requires = "server_seed", allow_hyphen_values = true)]
    salt: Option<String>,
    /// Deal N hands with salts T, T+1, .. (T must be a sequence number).
    #[arg(
        long,
        requires = "server_seed",
        value_name = "N",
        allow_negative_numbers = true
    )]
    count: Option<u64>,
    /// The deal of this distribution number (decimal, below n!) instead of seeds.
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    number: Option<String>,
    /// Write a human-readable walk through every step instead of JSON.
    #[arg(long)]
    explain: bool,
}

/// One deal as a JSON line.
#[derive(Debug, Serialize)]
pub(crate) struct DealLine<'a> {
    /// The game name.
    game: &'static str,
    /// The salt, for seeded deals.
    #[serde(skip_serializing_if = "Option::is_none")]
    salt: Option<&'a str>,
    /// The server seed's commitment, for seeded deals.
    #[serde(skip_serializing_if = "Option::is_none")]
    commitment: Option<&'a str>,
    /// Decimal: it can exceed every JSON number type (78! ~ 1.13e115).
    distribution_number: String,
    /// The dealt order, first card dealt first.
    deck: Vec<&'static str>,
    /// The hands, hand 0 (the dealer's left) first.
    hands: Vec<Vec<&'static str>>,
    /// The chien, for Tarot only.
    #[serde(skip_serializing_if = "Option::is_none")]
    chien: Option<Vec<&'static str>>,
}

impl<'a> DealLine<'a> {
    /// The line of `deal`, with its seeds' salt and commitment when it came from seeds.
    pub(crate) fn new(deal: &Deal, seeded: Option<(&'a str, &'a str)>) -> Self {
        DealLine {
            game: deal.deck.name(),
            salt: seeded.map(|(salt, _)| salt),
            commitment: seeded.map(|(_, commitment)| commitment),
            distribution_number: deal.distribution_number().to_string(),
            deck: deal.codes(&deal.order),
            hands: deal.hands.iter().map(|h| deal.codes(h)).collect(),
            chien: deal.deck.is_tarot().then(|| deal.codes(&deal.chien)),
        }
    }

    /// Writes the line (JSON and a newline).
    pub(crate) fn write(&self, out: &mut dyn Write) -> Result<(), CliError> {
        write_json_line(out, self)
    }
}

pub(crate) fn run(args: DealArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let deck: Deck = args.game.parse()?;
    match (
        &args.number,
        &args.server_seed,
        &args.client_seed,
        &args.salt,
    ) {
        (Some(number), _, _, _) => deal_number(deck, number, args.explain, out),
        (None, Some(server_seed), Some(client_seed), Some(salt)) => {
            let seeds = Seeds {
                deck,
                server_seed,
                client_seed,
                commitment: Commitment::of(server_seed).to_hex(),
            };
            match args.count {
                None => seeds.deal(salt, args.explain, out),
                Some(count) => seeds.deal_many(salt, count, args.explain, out),
            }
        }
        // clap's argument group and `requires` rule these combinations out.
        _ => Err(CliError::Invalid(
            "give --server-seed, --client-seed and --salt, or --number".into(),
        )),
    }
}

/// Writes one JSON object and a newline. Serialised first, so a closed pipe surfaces as
/// the IO error it is (which ends the run quietly) rather than as a JSON error.
pub(crate) fn write_json_line(out: &mut dyn Write, value: &impl Serialize) -> Result<(), CliError> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    out.write_all(&line)?;
    Ok(())
}

/// `--number N`: the deal of a distribution number.
fn deal_number(deck: Deck, text: &str, explain: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let number = number::parse(text, deck.len()).map_err(|e| CliError::arg("--number", e))?;
    let deal = Deal::from_number(deck, &number).map_err(|e| CliError::arg("--number", e))?;
    if explain {
        let mut e = Explanation::new();
        e.line(format!("game: {deck} ({})", describe(deck)))
            .line(format!("distribution number: {number}"))
            .line(format!(
                "picks: i_k = the digits of N in the mixed radix {}, {}, .., 1",
                deck.len(),
                deck.len() - 1
            ))
            .picks(deck.codes(), &deal.indices)
            .deal(&deal)
            .distribution_number(&deal);
        out.write_all(e.finish().as_bytes())?;
        return Ok(());
    }
    DealLine::new(&deal, None).write(out)
}

/// The seeds of a run of deals.
struct Seeds<'a> {
    deck: Deck,
    server_seed: &'a str,
    client_seed: &'a str,
    /// Lowercase hex commitment of the server seed, the same for every deal of the run.
    commitment: String,
}

impl Seeds<'_> {
    /// One deal, as a JSON line or a walk-through.
    fn deal(&self, salt: &str, explain: bool, out: &mut dyn Write) -> Result<(), CliError> {
        let deal = Deal::from_seeds(self.deck, self.server_seed, self.client_seed, salt);
        if explain {
            out.write_all(self.explain(salt, &deal).as_bytes())?;
            return Ok(());
        }
        DealLine::new(&deal, Some((salt, &self.commitment))).write(out)
    }

    /// `count` deals with salts `first, first + 1, ..`, streamed.
    fn deal_many(
        &self,
        first: &str,
        count: u64,
        explain: bool,
        out: &mut dyn Write,
    ) -> Result<(), CliError> {
        if count == 0 {
            return Err(CliError::arg("--count", "must be at least 1"));
        }
        let start = parse_sequence_salt(first)
            .map_err(|e| CliError::arg("--salt", format!("--count needs a numeric salt: {e}")))?;
        let last = start.checked_add(count - 1).ok_or_else(|| {
            CliError::arg(
                "--count",
                format!(
                    "salts {start} + {count} - 1 overflow the largest sequence number (2^64 - 1)"
                ),
            )
        })?;
        let progress = progress_bar(count);
        for hand in start..=last {
            if explain && hand != start {
                out.write_all(b"\n")?;
            }
            self.deal(&sequence_salt(hand), explain, out)?;
            progress.inc(1);
        }
        progress.finish_and_clear();
        Ok(())
    }

    /// The walk-through of one seeded deal.
    fn explain(&self, salt: &str, deal: &Deal) -> String {
        let generator = Generator::new(self.server_seed, self.client_seed, salt);
        // Every number of the cursors the shuffle reads, so each cursor shows its 64 bytes.
        let needed = self.deck.len().saturating_sub(1);
        let cursors = needed.div_ceil(8);
        let numbers: Vec<u64> = generator.numbers().take(cursors * 8).collect();
        let commitment = Commitment::of(self.server_seed);
        let mut e = Explanation::new();
        e.line(format!("game: {} ({})", self.deck, describe(self.deck)))
            .line(format!(
                "commitment = SHA-256(server_seed) = {} (short code {})",
                commitment,
                commitment.short_code()
            ))
            .seeds(self.server_seed, self.client_seed, salt, generator.key())
            .numbers(Some(self.client_seed), &numbers)
            .shuffle(self.deck.codes(), &numbers)
            .deal(deal)
            .distribution_number(deal);
        e.finish().to_owned()
    }
}

/// `52 cards, 4 hands of 13`, `78 cards, 4 hands of 18, chien of 6`.
fn describe(deck: Deck) -> String {
    let mut text = format!(
        "{} cards, {} hands of {}",
        deck.len(),
        deck.hands(),
        deck.hand_len()
    );
    if deck.is_tarot() {
        text.push_str(&format!(", chien of {}", deck.chien_len()));
    }
    text
}

/// A progress bar on stderr for long runs, only when a person is watching a terminal.
fn progress_bar(count: u64) -> ProgressBar {
    if count < 2 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(count), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} deals, {per_sec}, eta {eta}")
    {
        bar.set_style(style);
    }
    bar
}
