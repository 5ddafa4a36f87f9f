//! `fairdeal demo`: the whole commit-reveal story of a table, run for real.
//!
//! For a Tarot table and a Jeu du 10 table: a fresh server seed from the OS CSPRNG, its
//! published commitment and short code, the players' client seed, a real deal of hand 0
//! with its distribution number, then the reveal and every check a player can make (the
//! commitment matches, the deal re-derives identically, the number maps back to the deal).
//! A failed check is an error, so the demo doubles as a smoke test of the whole chain.

use std::io::Write;

use fairdeal_fairness::Deck;
use fairdeal_fairness::commitment::{ServerSeed, sequence_salt};
use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::number;

use crate::error::CliError;

/// The tables of the demo: the game, and the client seed its players fixed (in a real
/// table, derived from the seated players' own seed contributions before the first deal).
const TABLES: [(Deck, &str); 2] = [
    (
        Deck::Tarot4,
        "players alice/bob/carol/dave, contributions 4821-1937-5510-0264",
    ),
    (
        Deck::Dix,
        "players erin/frank/grace/heidi, contributions 7731-0458-2296-8813",
    ),
];

pub(crate) fn run(out: &mut dyn Write) -> Result<(), CliError> {
    writeln!(
        out,
        "fairdeal demo: commit, deal, reveal, verify (fresh seeds each run)"
    )?;
    for (table, (deck, client_seed)) in TABLES.into_iter().enumerate() {
        writeln!(out)?;
        table_story(out, table + 1, deck, client_seed)?;
    }
    writeln!(out)?;
    writeln!(out, "all checks passed")?;
    Ok(())
}

fn table_story(
    out: &mut dyn Write,
    table: usize,
    deck: Deck,
    client_seed: &str,
) -> Result<(), CliError> {
    writeln!(
        out,
        "== table {table}: {deck}, {} hands of {}{} ==",
        deck.hands(),
        deck.hand_len(),
        if deck.is_tarot() {
            format!(" and a chien of {}", deck.chien_len())
        } else {
            String::new()
        }
    )?;

    // 1. Commit.
    let seed = ServerSeed::generate().map_err(|e| CliError::Invalid(e.to_string()))?;
    let commitment = seed.commitment();
    writeln!(
        out,
        "1. before anyone sits, the server draws a secret seed (32 bytes from the OS CSPRNG)"
    )?;
    writeln!(out, "   and publishes only its commitment:")?;
    writeln!(out, "     commitment = SHA-256(server_seed) = {commitment}")?;
    writeln!(
        out,
        "     short code shown to players    = {}",
        commitment.short_code()
    )?;

    // 2. Client seed.
    writeln!(
        out,
        "2. the players fix the client seed before the first deal:"
    )?;
    writeln!(out, "     client seed = {client_seed:?}")?;

    // 3. Deal hand 0.
    let salt = sequence_salt(0);
    let deal = Deal::from_seeds(deck, seed.expose_secret(), client_seed, &salt);
    let number = deal.distribution_number();
    writeln!(
        out,
        "3. hand 0 is dealt with salt {salt:?} (each player sees only their own hand):"
    )?;
    for (h, hand) in deal.hands.iter().enumerate() {
        writeln!(out, "     hand {h}: {}", deal.codes(hand).join(" "))?;
    }
    if deck.is_tarot() {
        writeln!(out, "     chien : {}", deal.codes(&deal.chien).join(" "))?;
    }
    writeln!(out, "     distribution number: {number}")?;

    // 4. Reveal.
    let revealed = seed.expose_secret();
    writeln!(out, "4. end of the game: the server reveals the seed:")?;
    writeln!(out, "     server seed = {revealed}")?;

    // 5. Verify, as any player would.
    writeln!(out, "5. anyone verifies:")?;
    check(
        out,
        "SHA-256 of the revealed seed matches the published commitment",
        commitment.matches(revealed),
    )?;
    let rederived = Deal::from_seeds(deck, revealed, client_seed, &salt);
    check(
        out,
        "the deal re-derived from the revealed seed is identical",
        rederived == deal,
    )?;
    let from_number = Deal::from_number(deck, &number).ok();
    check(
        out,
        "the distribution number maps back to the same deal",
        from_number.as_ref() == Some(&deal),
    )?;
    let written = deal.codes(&deal.order);
    let from_codes = Deal::from_codes(deck, written.iter().copied()).ok();
    check(
        out,
        "the dealt order's number (fairdeal number) is the same number",
        from_codes.map(|d| d.distribution_number()) == Some(number.clone())
            && number < number::factorial(deck.len()),
    )?;
    writeln!(out, "   to check it yourself:")?;
    writeln!(
        out,
        "     fairdeal commit --server-seed {revealed}\n     fairdeal deal --game {deck} --server-seed {revealed} --client-seed '{client_seed}' --salt {salt} --explain\n     fairdeal deal --game {deck} --number {number}"
    )?;
    Ok(())
}

/// Prints one verification and fails the demo if it does not hold.
fn check(out: &mut dyn Write, what: &str, holds: bool) -> Result<(), CliError> {
    writeln!(out, "     [{}] {what}", if holds { "ok" } else { "FAILED" })?;
    if holds {
        Ok(())
    } else {
        Err(CliError::Invalid(format!(
            "demo verification failed: {what}"
        )))
    }
}
