//! `fairdeal number`: the distribution number of a dealt order (the reverse of
//! `fairdeal deal --number`, whose JSON line it writes).

use std::io::Write;

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;

use crate::deal::DealLine;
use crate::error::CliError;

/// Arguments of `fairdeal number`.
#[derive(Debug, clap::Args)]
pub(crate) struct NumberArgs {
    /// The game: bridge, dix, ruff, tarot3, tarot4 or tarot5.
    #[arg(long)]
    game: String,
    /// The dealt order, first card dealt first: card codes separated by commas or spaces,
    /// in one argument or several (`--deck AS,KS,QS ..` or `--deck AS KS QS ..`).
    #[arg(long, required = true, num_args = 1.., value_name = "CODES")]
    deck: Vec<String>,
}

pub(crate) fn run(args: NumberArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let deck: Deck = args.game.parse()?;
    let codes: Vec<&str> = args
        .deck
        .iter()
        .flat_map(|value| value.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|code| !code.is_empty())
        .collect();
    if codes.is_empty() {
        return Err(CliError::arg("--deck", "no card codes given"));
    }
    let deal = Deal::from_codes(deck, codes).map_err(|e| CliError::arg("--deck", e))?;
    DealLine::new(&deal, None).write(out)
}
