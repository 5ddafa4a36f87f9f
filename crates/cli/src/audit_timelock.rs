//! The timelocked-seed checks of `fairdeal audit` (docs/decisions.md, "A timelocked seed"):
//! for a table whose commitment published its server seed encrypted to a drand round `R'`,
//! against the chain the auditor chose (as the drand checks), never a key read from the export.
//!
//! - `timelock_seed`: the commitment has a drand round (the timelock is on the same chain);
//!   the latest end is after the commitment's time; `R'` is published no earlier than the
//!   latest end; the ciphertext is a tlock age file naming `R'` and the audited chain; and no
//!   hand was dealt (`HandDealt`) at or after the latest end.
//! - `timelock_open`: with `R'`'s beacon given by the auditor (`--timelock-round`,
//!   `--timelock-signature`, and optionally `--timelock-randomness`), the beacon is the
//!   chain's signature of `R'` (and its randomness SHA-256 of it), the ciphertext decrypts
//!   with it, the plaintext's SHA-256 is the commitment, and it is the revealed seed when the
//!   export has the reveal. Without the beacon (before `R'`, for instance) it is not run: the
//!   summary shows it checked 0 times. A beacon given for another round fails it.

use fairdeal_drand::timelock::{self, TimelockError};
use fairdeal_drand::{Beacon, Chain};
use fairdeal_fairness::commitment::Commitment;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use prost::{Message, Name};

use super::{Ev, Report};

/// `occurred_at` in whole Unix seconds, rounded down (`None`: missing).
fn seconds(ev: &Ev) -> Option<i64> {
    ev.env.occurred_at.as_ref().map(|ts| ts.seconds)
}

/// The first decodable event of type `M` among `events`, with its line and time.
fn first<'e, M: Message + Name + Default>(events: &[&'e Ev]) -> Option<(&'e Ev, M)> {
    events
        .iter()
        .find_map(|ev| ev.payload::<M>().and_then(Result::ok).map(|m| (*ev, m)))
}

/// The timelock checks of a table: `commitment_events` is its commitment stream
/// (`commitmenttable-<id>`), `deal_events` its dealing stream (`deals-<id>`), `chain` the
/// audited drand chain, `beacons` the rounds the auditor gave.
pub(super) fn check(
    report: &mut Report,
    chain: Option<&Chain>,
    beacons: &[Beacon],
    commitment_events: &[&Ev],
    deal_events: &[&Ev],
) {
    let Some((published_ev, published)) = first::<cpb::TableCommitmentPublished>(commitment_events)
    else {
        // No commitment in the record: the `commitment` check names it.
        return;
    };
    let line = published_ev.line;
    let round = published.timelock_round;
    if round == 0 {
        if !published.timelock_ciphertext.is_empty() || published.timelock_latest_end != 0 {
            report.fail(
                "timelock_seed",
                line,
                "a timelock ciphertext or latest end without a timelock round",
            );
        }
        return;
    }
    let Some(chain) = chain else {
        report.fail(
            "timelock_seed",
            line,
            "no drand chain to check the timelocked seed against",
        );
        return;
    };
    let latest_end = published.timelock_latest_end;
    let mut problems = Vec::new();
    if published.drand_round == 0 {
        problems.push("a timelocked seed on a table without a drand round".to_owned());
    }
    match seconds(published_ev) {
        Some(at) if i128::from(latest_end) > i128::from(at) => {}
        Some(at) => problems.push(format!(
            "the latest end {latest_end} is not after the commitment's time {at}"
        )),
        None => problems.push("the commitment has no time".to_owned()),
    }
    match chain.schedule().round_time(round) {
        Ok(time) if time >= latest_end => {}
        Ok(time) => problems.push(format!(
            "timelock round {round} is published at {time}, before the latest end {latest_end}"
        )),
        Err(e) => problems.push(format!("timelock round {round}: {e}")),
    }
    match timelock::header(published.timelock_ciphertext.as_bytes()) {
        Ok(header) => {
            if header.round != round {
                problems.push(format!(
                    "the ciphertext is encrypted to round {}, not the timelock round {round}",
                    header.round
                ));
            }
            if header.chain_hash != chain.chain_hash() {
                problems.push(format!(
                    "the ciphertext is for chain {}, not the audited chain {}",
                    hex::encode(header.chain_hash),
                    hex::encode(chain.chain_hash())
                ));
            }
        }
        Err(e) => problems.push(format!("timelock_ciphertext: {e}")),
    }
    let end = i64::try_from(latest_end).unwrap_or(i64::MAX);
    for ev in deal_events {
        if !matches!(ev.payload::<dpb::HandDealt>(), Some(Ok(_))) {
            continue;
        }
        match seconds(ev) {
            Some(at) if at < end => {}
            Some(at) => problems.push(format!(
                "line {}: a hand dealt at {at}, at or after the latest end {latest_end}",
                ev.line
            )),
            None => problems.push(format!("line {}: a hand dealt with no time", ev.line)),
        }
    }
    report.check("timelock_seed", line, super::verdict(&problems));

    // Opening it, with the auditor's beacon of R'.
    let Some(beacon) = beacons.iter().find(|b| b.round() == round) else {
        if let Some(other) = beacons.first() {
            report.fail(
                "timelock_open",
                line,
                format!(
                    "the beacon given is of round {}, the timelock round is {round}",
                    other.round()
                ),
            );
        }
        return;
    };
    let revealed = first::<cpb::TableSeedRevealed>(commitment_events);
    let verdict = match timelock::decrypt(chain, beacon, published.timelock_ciphertext.as_bytes()) {
        Err(TimelockError::Verify(e)) => Err(format!(
            "the beacon of round {round} is not the audited chain's: {e}"
        )),
        Err(e) => Err(format!("the ciphertext does not open: {e}")),
        Ok(plaintext) => match std::str::from_utf8(&plaintext) {
            Err(_) => Err("the decrypted seed is not UTF-8 text".to_owned()),
            Ok(seed) => {
                let mut problems = Vec::new();
                if !Commitment::of(seed)
                    .to_hex()
                    .eq_ignore_ascii_case(&published.commitment)
                {
                    problems.push("the decrypted seed's SHA-256 is not the commitment".to_owned());
                }
                if let Some((ev, reveal)) = &revealed
                    && reveal.server_seed != seed
                {
                    problems.push(format!(
                        "the decrypted seed is not the seed revealed at line {}",
                        ev.line
                    ));
                }
                super::verdict(&problems)
            }
        },
    };
    report.check("timelock_open", line, verdict);
}
