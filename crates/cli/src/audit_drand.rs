//! The drand checks of `fairdeal audit` (docs/commitment-and-dealing.md, "a drand round as
//! the delayed value"): for a table whose commitment fixed a drand round, the round bound
//! is verified against a chain the auditor chose (quicknet, built in, or `--drand-chain`),
//! never against a key read from the export.
//!
//! - `drand_chain`: the chain the commitment names (`drand_chain_hash`) is the chain
//!   audited against.
//! - `drand_round`: the commitment fixed a round `R` and a later fallback `F`; `R` is
//!   published at or after the commitment's time (so its value did not exist when the seed
//!   was fixed); the commitment precedes every contribution, the binding and the client
//!   seed's fixing; the round bound is `R` (or `F` after a stall); it was bound before the
//!   client seed was fixed. A table without a drand round has no drand binding.
//! - `drand_signature`: the bound signature is the chain's BLS signature of the bound round.
//! - `drand_randomness`: the bound randomness is SHA-256 of that signature, and it is the
//!   delayed value (`DelayedValueBound.value`, which the `client_seed` check mixes into the
//!   client seed).
//! - `drand_fallback`: a `DrandRoundStalled` names the committed `R` and `F`, once, for a
//!   drand table, declared no earlier than `R`'s time and before anything was bound.
//!
//! Times are the events' `occurred_at` (the commitment service's clock, recorded in the
//! log) against the chain's schedule.

use fairdeal_drand::{Chain, Randomness, Signature};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use prost::{Message, Name};

use super::{Ev, Report};

/// An event of the commitment stream with what the checks need of its envelope.
#[derive(Debug)]
struct At<M> {
    line: usize,
    version: u64,
    /// `occurred_at` in microseconds since the Unix epoch (`None`: missing or out of range).
    micros: Option<i128>,
    message: M,
}

fn micros(ev: &Ev) -> Option<i128> {
    let ts = ev.env.occurred_at.as_ref()?;
    Some(i128::from(ts.seconds) * 1_000_000 + i128::from(ts.nanos) / 1_000)
}

/// The commitment stream's events of type `M` that decode. An undecodable one fails
/// `check` when given; the types other checks decode too (the commitment, contributions, the
/// binding, the client seed) are failed there, once.
fn all<M: Message + Name + Default>(
    report: &mut Report,
    check: Option<&'static str>,
    events: &[&Ev],
) -> Vec<At<M>> {
    let mut out = Vec::new();
    for ev in events {
        match ev.payload::<M>() {
            Some(Ok(message)) => out.push(At {
                line: ev.line,
                version: ev.env.stream_version,
                micros: micros(ev),
                message,
            }),
            Some(Err(e)) => {
                if let Some(check) = check {
                    report.fail(check, ev.line, e);
                }
            }
            None => {}
        }
    }
    out
}

/// A time in microseconds as UTC seconds with their fraction, for the details.
fn seconds(micros: i128) -> String {
    format!(
        "{}.{:06}",
        micros.div_euclid(1_000_000),
        micros.rem_euclid(1_000_000)
    )
}

/// The drand checks of table `table_id` over `events`, its commitment stream
/// (`commitmenttable-<id>`) in file order, against `chain` (`None`: no chain to verify
/// against, every drand table fails).
pub(super) fn check(report: &mut Report, chain: Option<&Chain>, table_id: &str, events: &[&Ev]) {
    let published = all::<cpb::TableCommitmentPublished>(report, None, events);
    let stalls = all::<cpb::DrandRoundStalled>(report, Some("drand_fallback"), events);
    let bound = all::<cpb::DelayedValueBound>(report, None, events);
    let bound = bound.into_iter().find(|b| b.message.subject_id == table_id);
    let Some(committed) = published.into_iter().next() else {
        // No commitment in the record: the `commitment` check names it.
        return;
    };
    let round = committed.message.drand_round;
    if round == 0 {
        no_drand_round(report, &stalls, bound.as_ref());
        return;
    }
    let Some(chain) = chain else {
        report.fail(
            "drand_chain",
            committed.line,
            "no drand chain to verify the table's round against",
        );
        return;
    };
    let fallback = committed.message.drand_fallback_round;
    let fixed = all::<cpb::ClientSeedFixed>(report, None, events);
    let contributed = all::<cpb::SeedContributed>(report, None, events);

    // The chain.
    let audited = hex::encode(chain.chain_hash());
    report.check(
        "drand_chain",
        committed.line,
        if committed
            .message
            .drand_chain_hash
            .eq_ignore_ascii_case(&audited)
        {
            Ok(())
        } else {
            Err(format!(
                "the commitment names drand chain {:?}, the audit checks chain {audited} ({}); \
                 give that chain's info with --drand-chain",
                committed.message.drand_chain_hash,
                chain.info().beacon_id
            ))
        },
    );

    // The round fixed at commit: after the commitment, before anything it protects.
    let mut problems = Vec::new();
    if fallback <= round {
        problems.push(format!(
            "the fallback round {fallback} does not follow round {round}"
        ));
    }
    match (chain.schedule().round_time(round), committed.micros) {
        (Ok(time), Some(at)) if i128::from(time) * 1_000_000 >= at => {}
        (Ok(time), Some(at)) => problems.push(format!(
            "round {round} is published at {time}, before the commitment at {}: its value may \
             have been known when the server seed was fixed",
            seconds(at)
        )),
        (Err(e), _) => problems.push(format!("round {round}: {e}")),
        (_, None) => problems.push("the commitment event has no time (occurred_at)".into()),
    }
    let later = contributed
        .iter()
        .map(|c| (c.version, "a SeedContributed"))
        .chain(fixed.iter().map(|f| (f.version, "the ClientSeedFixed")))
        .chain(bound.iter().map(|b| (b.version, "the DelayedValueBound")));
    for (version, what) in later {
        if version < committed.version {
            problems.push(format!(
                "{what} (version {version}) precedes the commitment (version {})",
                committed.version
            ));
        }
    }
    report.check("drand_round", committed.line, super::verdict(&problems));

    // A stall, if declared: at most one, for R, after R's time, before the binding.
    let stalled = !stalls.is_empty();
    for (i, stall) in stalls.iter().enumerate() {
        let mut problems = Vec::new();
        if i > 0 {
            problems.push("the round is declared stalled a second time".to_owned());
        }
        if stall.message.table_id != table_id {
            problems.push(format!("for table {:?}", stall.message.table_id));
        }
        if stall.message.round != round || stall.message.fallback_round != fallback {
            problems.push(format!(
                "names round {} and fallback {}, the commitment fixed {round} and {fallback}",
                stall.message.round, stall.message.fallback_round
            ));
        }
        match (chain.schedule().round_time(round), stall.micros) {
            (Ok(time), Some(at)) if at >= i128::from(time) * 1_000_000 => {}
            (Ok(time), Some(at)) => problems.push(format!(
                "declared at {}, before round {round} was due ({time})",
                seconds(at)
            )),
            (Err(e), _) => problems.push(format!("round {round}: {e}")),
            (_, None) => problems.push("the stall event has no time (occurred_at)".into()),
        }
        if let Some(b) = &bound
            && b.version < stall.version
        {
            problems.push(format!(
                "declared after the delayed value was bound (version {})",
                b.version
            ));
        }
        report.check("drand_fallback", stall.line, super::verdict(&problems));
    }

    // The binding.
    let Some(bound) = bound else {
        report.fail(
            "drand_round",
            committed.line,
            format!("drand round {round} (fallback {fallback}) was never bound"),
        );
        return;
    };
    let b = &bound.message;
    let expected = if stalled { fallback } else { round };
    let mut problems = Vec::new();
    if b.drand_round != expected {
        problems.push(if b.drand_round == 0 {
            format!("the delayed value was bound by hand, not as drand round {expected}")
        } else if stalled {
            format!(
                "bound round {}, but round {round} was declared stalled: the fallback round \
                 {fallback} is the one",
                b.drand_round
            )
        } else {
            format!(
                "bound round {}, the commitment fixed round {round} (and no stall was declared)",
                b.drand_round
            )
        });
    }
    if let Some(first) = fixed.first()
        && first.version < bound.version
    {
        problems.push(format!(
            "bound after the client seed was fixed (version {})",
            first.version
        ));
    }
    report.check("drand_round", bound.line, super::verdict(&problems));

    let signature = Signature::from_hex(&b.drand_signature)
        .map_err(|e| format!("DelayedValueBound.drand_signature: {e}"));
    report.check(
        "drand_signature",
        bound.line,
        signature.as_ref().map_err(Clone::clone).and_then(|sig| {
            chain
                .verify_signature(b.drand_round, sig)
                .map(|_| ())
                .map_err(|e| {
                    format!(
                        "DelayedValueBound.drand_signature is {e} of chain {audited} ({})",
                        chain.info().beacon_id
                    )
                })
        }),
    );
    let mut problems = Vec::new();
    match Randomness::from_hex(&b.drand_randomness) {
        Err(e) => problems.push(format!("DelayedValueBound.drand_randomness: {e}")),
        Ok(recorded) => {
            if let Ok(sig) = &signature
                && recorded != sig.randomness()
            {
                problems.push(format!(
                    "DelayedValueBound.drand_randomness {recorded} is not SHA-256 of the \
                     signature ({})",
                    sig.randomness()
                ));
            }
            if b.value != recorded.to_hex() {
                problems.push(format!(
                    "the delayed value mixed into the client seed is {:?}, not the round's \
                     randomness {recorded}",
                    b.value
                ));
            }
        }
    }
    report.check("drand_randomness", bound.line, super::verdict(&problems));
}

/// A table whose commitment fixed no drand round: nothing may claim one.
fn no_drand_round(
    report: &mut Report,
    stalls: &[At<cpb::DrandRoundStalled>],
    bound: Option<&At<cpb::DelayedValueBound>>,
) {
    for stall in stalls {
        report.fail(
            "drand_fallback",
            stall.line,
            "a drand round is declared stalled, but the commitment fixed no drand round",
        );
    }
    if let Some(b) = bound {
        let m = &b.message;
        if m.drand_round != 0 || !m.drand_signature.is_empty() || !m.drand_randomness.is_empty() {
            report.fail(
                "drand_round",
                b.line,
                format!(
                    "DelayedValueBound names drand round {}, but the commitment fixed no drand \
                     round",
                    m.drand_round
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    //! The checks on a table's commitment stream built here, with real quicknet rounds (their
    //! sources are listed in crates/drand/tests/vectors.rs) against the built-in chain, and a
    //! local test chain's rounds against quicknet (refused) and against that chain.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use fairdeal_drand::{QUICKNET, QUICKNET_CHAIN_HASH, Schedule, TestChain};
    use fairdeal_event::Envelope;
    use prost_types::Timestamp;

    use super::*;
    use crate::audit::{CHECKS, Count};

    const TABLE: &str = "0190b6a2-7c1e-7d4a-9f0b-2c5d8e9f1a2b";
    const SIG_123: &str = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92";
    const SIG_1000: &str = "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39";
    const RANDOMNESS_1000: &str =
        "fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd";

    /// Quicknet's time of `round`, in seconds.
    fn time_of(round: u64) -> i64 {
        i64::try_from(QUICKNET.schedule.round_time(round).unwrap()).unwrap()
    }

    /// A commitment stream: each event at a time (Unix seconds), in version order.
    struct Stream(Vec<Ev>);

    impl Stream {
        fn new() -> Self {
            Self(Vec::new())
        }

        fn push<M: Message + Name>(mut self, at: i64, message: M) -> Self {
            let version = self.0.len() as u64 + 1;
            self.0.push(Ev {
                line: version as usize + 1,
                env: Envelope {
                    stream_id: format!("commitmenttable-{TABLE}"),
                    stream_version: version,
                    event_type: M::full_name(),
                    occurred_at: Some(Timestamp {
                        seconds: at,
                        nanos: 0,
                    }),
                    payload: message.encode_to_vec(),
                    ..Default::default()
                },
            });
            self
        }

        fn audit(&self, chain: &Chain) -> Report {
            let mut report = Report::default();
            for check in CHECKS {
                report.checks.insert(check, Count::default());
            }
            let events: Vec<&Ev> = self.0.iter().collect();
            check(&mut report, Some(chain), TABLE, &events);
            report
        }
    }

    fn committed(round: u64, fallback: u64, chain_hash: [u8; 32]) -> cpb::TableCommitmentPublished {
        cpb::TableCommitmentPublished {
            table_id: TABLE.into(),
            seed_id: "seed-1".into(),
            commitment: "c".repeat(64),
            delayed_source: format!("drand round {round}, fallback {fallback}"),
            drand_round: round,
            drand_fallback_round: fallback,
            drand_chain_hash: hex::encode(chain_hash),
            ..Default::default()
        }
    }

    fn contributed(seat: u32) -> cpb::SeedContributed {
        cpb::SeedContributed {
            table_id: TABLE.into(),
            seat,
            player_id: format!("player-{seat}"),
            contribution: format!("c{seat}"),
        }
    }

    fn bound(round: u64, signature: &str, randomness: &str) -> cpb::DelayedValueBound {
        cpb::DelayedValueBound {
            subject_id: TABLE.into(),
            value: randomness.into(),
            drand_round: round,
            drand_signature: signature.into(),
            drand_randomness: randomness.into(),
        }
    }

    fn fixed() -> cpb::ClientSeedFixed {
        cpb::ClientSeedFixed {
            table_id: TABLE.into(),
            client_seed: "seed".into(),
            contributions_hash: "hash".into(),
        }
    }

    fn stalled(round: u64, fallback: u64) -> cpb::DrandRoundStalled {
        cpb::DrandRoundStalled {
            table_id: TABLE.into(),
            round,
            fallback_round: fallback,
            reason: "relays down".into(),
            ..Default::default()
        }
    }

    /// A quicknet table committed 30 s before round 1000, bound with round 1000 as published
    /// (`bind` may change the binding).
    fn quicknet_table(bind: impl FnOnce(&mut cpb::DelayedValueBound)) -> Stream {
        let mut b = bound(1000, SIG_1000, RANDOMNESS_1000);
        bind(&mut b);
        let t = time_of(1000);
        Stream::new()
            .push(t - 30, committed(1000, 1100, QUICKNET_CHAIN_HASH))
            .push(t - 20, contributed(0))
            .push(t - 10, contributed(1))
            .push(t + 1, b)
            .push(t + 2, fixed())
    }

    fn quicknet() -> Chain {
        Chain::quicknet().unwrap()
    }

    /// `check` failed, at `line` (0: any line).
    #[track_caller]
    fn fails(report: &Report, check: &str, line: usize) {
        assert!(
            report
                .failures
                .iter()
                .any(|f| f.check == check && (line == 0 || f.line == line)),
            "expected {check} to fail at line {line}: {:#?}",
            report.failures
        );
    }

    #[track_caller]
    fn clean(report: &Report, checks: &[&str]) {
        assert!(report.failures.is_empty(), "{:#?}", report.failures);
        for check in checks {
            assert!(report.checks[check].checked > 0, "{check} was not checked");
        }
    }

    const ALL: [&str; 4] = [
        "drand_chain",
        "drand_round",
        "drand_signature",
        "drand_randomness",
    ];

    #[test]
    fn a_real_quicknet_round_bound_after_the_commitment_passes() {
        let report = quicknet_table(|_| {}).audit(&quicknet());
        clean(&report, &ALL);
        assert_eq!(report.checks["drand_fallback"].checked, 0);
        // Lowercase or uppercase hex of the chain names the same chain.
        let t = time_of(1000);
        let mut upper = committed(1000, 1100, QUICKNET_CHAIN_HASH);
        upper.drand_chain_hash = upper.drand_chain_hash.to_uppercase();
        let report = Stream::new()
            .push(t - 30, upper)
            .push(t + 1, bound(1000, SIG_1000, RANDOMNESS_1000))
            .push(t + 2, fixed())
            .audit(&quicknet());
        clean(&report, &ALL);
    }

    #[test]
    fn a_changed_round_signature_or_randomness_fails_its_check() {
        // The binding is line 5 of these streams.
        let report = quicknet_table(|b| b.drand_round = 1001).audit(&quicknet());
        fails(&report, "drand_round", 5);
        fails(&report, "drand_signature", 5);
        let report = quicknet_table(|b| b.drand_signature = SIG_123.into()).audit(&quicknet());
        fails(&report, "drand_signature", 5);
        fails(&report, "drand_randomness", 5);
        assert!(!report.failed("drand_round"), "{:#?}", report.failures);
        let report = quicknet_table(|b| b.drand_randomness = "ab".repeat(32)).audit(&quicknet());
        fails(&report, "drand_randomness", 5);
        assert!(!report.failed("drand_signature"), "{:#?}", report.failures);
        // The value mixed into the client seed is not the round's randomness.
        let report = quicknet_table(|b| b.value = "cd".repeat(32)).audit(&quicknet());
        fails(&report, "drand_randomness", 5);
        // Not hex, not a point.
        let report = quicknet_table(|b| b.drand_signature = "zz".into()).audit(&quicknet());
        fails(&report, "drand_signature", 5);
        let report = quicknet_table(|b| b.drand_randomness = "x".into()).audit(&quicknet());
        fails(&report, "drand_randomness", 5);
        // Bound by hand on a drand table.
        let report = quicknet_table(|b| *b = bound(0, "", "")).audit(&quicknet());
        fails(&report, "drand_round", 5);
        fails(&report, "drand_signature", 5);
    }

    #[test]
    fn the_round_must_come_after_the_commitment_and_before_the_client_seed() {
        let t = time_of(1000);
        let b = || bound(1000, SIG_1000, RANDOMNESS_1000);
        // Committed one second after round 1000 was published.
        let late = Stream::new()
            .push(t + 1, committed(1000, 1100, QUICKNET_CHAIN_HASH))
            .push(t + 2, b())
            .push(t + 3, fixed())
            .audit(&quicknet());
        fails(&late, "drand_round", 2);
        assert!(
            late.failures[0].detail.contains("before the commitment"),
            "{late:?}"
        );
        // At the round's very time is not before it.
        let at = Stream::new()
            .push(t, committed(1000, 1100, QUICKNET_CHAIN_HASH))
            .push(t + 2, b())
            .push(t + 3, fixed())
            .audit(&quicknet());
        clean(&at, &ALL);
        // The client seed fixed before the binding; a contribution before the commitment.
        let report = Stream::new()
            .push(t - 30, committed(1000, 1100, QUICKNET_CHAIN_HASH))
            .push(t - 1, fixed())
            .push(t + 1, b())
            .audit(&quicknet());
        fails(&report, "drand_round", 4);
        let report = Stream::new()
            .push(t - 40, contributed(0))
            .push(t - 30, committed(1000, 1100, QUICKNET_CHAIN_HASH))
            .push(t + 1, b())
            .push(t + 2, fixed())
            .audit(&quicknet());
        fails(&report, "drand_round", 3);
        // A fallback that does not follow the round; another chain; never bound.
        let report = Stream::new()
            .push(t - 30, committed(1000, 1000, QUICKNET_CHAIN_HASH))
            .push(t + 1, b())
            .audit(&quicknet());
        fails(&report, "drand_round", 2);
        let report = Stream::new()
            .push(t - 30, committed(1000, 1100, [7; 32]))
            .push(t + 1, b())
            .audit(&quicknet());
        fails(&report, "drand_chain", 2);
        let report = Stream::new()
            .push(t - 30, committed(1000, 1100, QUICKNET_CHAIN_HASH))
            .audit(&quicknet());
        fails(&report, "drand_round", 2);
        // The commitment fixed R = 1000; round 123 (a genuine signature) is not R.
        let report = Stream::new()
            .push(t - 30, committed(1000, 1100, QUICKNET_CHAIN_HASH))
            .push(
                t + 1,
                bound(
                    123,
                    SIG_123,
                    &Signature::from_hex(SIG_123).unwrap().randomness().to_hex(),
                ),
            )
            .audit(&quicknet());
        fails(&report, "drand_round", 3);
        assert!(!report.failed("drand_signature"), "{:#?}", report.failures);
    }

    #[test]
    fn after_a_stall_only_the_fallback_round_may_be_bound() {
        // R = 123 stalled, F = 1000 bound: committed 30 s before round 123.
        let (t123, t1000) = (time_of(123), time_of(1000));
        let table = |stall_at: i64, stall: cpb::DrandRoundStalled, b: cpb::DelayedValueBound| {
            Stream::new()
                .push(t123 - 30, committed(123, 1000, QUICKNET_CHAIN_HASH))
                .push(stall_at, stall)
                .push(t1000 + 1, b)
                .push(t1000 + 2, fixed())
                .audit(&quicknet())
        };
        let fallback = || bound(1000, SIG_1000, RANDOMNESS_1000);
        let r123 = Signature::from_hex(SIG_123).unwrap().randomness().to_hex();
        let report = table(t123 + 60, stalled(123, 1000), fallback());
        clean(&report, &ALL);
        assert_eq!(report.checks["drand_fallback"].checked, 1);
        // Declared before the round was even due.
        let report = table(t123 - 1, stalled(123, 1000), fallback());
        fails(&report, "drand_fallback", 3);
        // Naming other rounds than those committed.
        let report = table(t123 + 60, stalled(124, 1000), fallback());
        fails(&report, "drand_fallback", 3);
        // The round bound anyway after its stall.
        let report = table(t123 + 60, stalled(123, 1000), bound(123, SIG_123, &r123));
        fails(&report, "drand_round", 4);
        // The fallback bound without a stall declared.
        let report = Stream::new()
            .push(t123 - 30, committed(123, 1000, QUICKNET_CHAIN_HASH))
            .push(t1000 + 1, fallback())
            .audit(&quicknet());
        fails(&report, "drand_round", 3);
        // A stall after the binding, and a second stall.
        let report = Stream::new()
            .push(t123 - 30, committed(123, 1000, QUICKNET_CHAIN_HASH))
            .push(t123 + 1, bound(123, SIG_123, &r123))
            .push(t123 + 60, stalled(123, 1000))
            .audit(&quicknet());
        fails(&report, "drand_fallback", 4);
        let report = Stream::new()
            .push(t123 - 30, committed(123, 1000, QUICKNET_CHAIN_HASH))
            .push(t123 + 60, stalled(123, 1000))
            .push(t123 + 61, stalled(123, 1000))
            .push(t1000 + 1, fallback())
            .audit(&quicknet());
        fails(&report, "drand_fallback", 4);
    }

    #[test]
    fn a_table_without_a_drand_round_runs_no_drand_check_and_claims_none() {
        let by_hand = cpb::DelayedValueBound {
            subject_id: TABLE.into(),
            value: "EuroMillions 2026-11-24: 1 2 3 4 5".into(),
            ..Default::default()
        };
        let report = Stream::new()
            .push(100, committed(0, 0, [0; 32]))
            .push(101, by_hand.clone())
            .push(102, fixed())
            .audit(&quicknet());
        assert!(report.failures.is_empty(), "{:#?}", report.failures);
        for check in CHECKS.iter().filter(|c| c.starts_with("drand_")) {
            assert_eq!(report.checks[check].checked, 0, "{check}");
        }
        let report = Stream::new()
            .push(100, committed(0, 0, [0; 32]))
            .push(101, bound(1000, SIG_1000, RANDOMNESS_1000))
            .audit(&quicknet());
        fails(&report, "drand_round", 3);
        let report = Stream::new()
            .push(100, committed(0, 0, [0; 32]))
            .push(101, stalled(1, 2))
            .push(102, by_hand)
            .audit(&quicknet());
        fails(&report, "drand_fallback", 3);
    }

    #[test]
    fn a_test_chains_round_verifies_only_against_that_chain() {
        let now = 1_800_000_000;
        let chain = TestChain::from_seed(&[3; 32], Schedule::new(now - 100, 1).unwrap()).unwrap();
        let info = chain.info();
        let round = info.schedule.round_after(now, 5).unwrap();
        let beacon = chain.sign(round).unwrap();
        let randomness = beacon.signature().randomness().to_hex();
        let stream = Stream::new()
            .push(
                i64::try_from(now).unwrap(),
                committed(round, round + 3, info.chain_hash()),
            )
            .push(
                i64::try_from(now).unwrap() + 10,
                bound(round, &beacon.signature().to_hex(), &randomness),
            )
            .push(i64::try_from(now).unwrap() + 11, fixed());
        clean(&stream.audit(&chain.chain().unwrap()), &ALL);
        // Against quicknet (the default), whatever the log says: its chain and its
        // signature are refused.
        let report = stream.audit(&quicknet());
        fails(&report, "drand_chain", 2);
        fails(&report, "drand_signature", 3);
    }
}
