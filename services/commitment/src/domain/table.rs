//! A table's commitment (SPEC section 4, "Table games"; ARCHITECTURE "Fairness flow").
//!
//! Lifecycle: **published** (server seed generated, only its commitment public, optionally
//! a delayed-value source named) -> **contributions** (one per seat, one per player) ->
//! **delayed value bound** (if a source was named) -> **client seed fixed** (at the first
//! deal; from then on nothing can be contributed or bound) -> **revealed** (at game end, or
//! by an audited operator action). Dealing is possible only between the fix and the reveal.

use std::collections::BTreeMap;

use fairdeal_fairness::client_seed::{contributions_hash, table_client_seed};
use fairdeal_fairness::commitment::{Commitment, ServerSeed};
use uuid::Uuid;

use super::client_seed::{Contribution, DelayedSource, DelayedValue};
use super::drand::{DrandBeacon, DrandRound, DrandSubject};
use super::{DomainError, RevealReason};

/// Highest seat number accepted (tables seat at most 10 players; the margin is harmless).
pub const MAX_SEAT: u32 = 15;

/// Everything that can happen to a table's commitment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableEvent {
    /// The seed was generated and sealed; its commitment is public.
    Published {
        /// The table.
        table_id: Uuid,
        /// Where the sealed seed is kept.
        seed_id: Uuid,
        /// SHA-256 of the seed.
        commitment: Commitment,
        /// The delayed public value that will join the client seed, named in advance.
        delayed_source: Option<DelayedSource>,
        /// The drand round fixed now, whose randomness will be the delayed value.
        drand: Option<DrandRound>,
    },
    /// A seated player contributed a seed.
    Contributed {
        /// The seat.
        seat: u32,
        /// The player.
        player_id: Uuid,
        /// The contribution (public).
        contribution: Contribution,
    },
    /// The named delayed value became known and was recorded.
    DelayedValueBound {
        /// The value.
        value: DelayedValue,
        /// The verified drand round it is the randomness of (none: bound by hand).
        drand: Option<DrandBeacon>,
    },
    /// The drand round could not be fetched in time: the fallback round is now the one.
    DrandStalled {
        /// The stalled round.
        round: u64,
        /// The round bound instead.
        fallback_round: u64,
        /// The last failure, for operators.
        reason: String,
    },
    /// The client seed was fixed (first deal).
    ClientSeedFixed {
        /// The client seed every hand of the table uses.
        client_seed: String,
        /// SHA-256 of the canonical contributions (the client seed's first part).
        contributions_hash: String,
    },
    /// The server seed was revealed.
    Revealed {
        /// The seed (public from this event on; Debug still redacts it).
        server_seed: ServerSeed,
        /// Game end or operator action.
        reason: RevealReason,
    },
}

/// The state of a table's commitment, folded from its events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableCommitment {
    /// The table.
    pub table_id: Uuid,
    /// The sealed seed's id.
    pub seed_id: Uuid,
    /// The published commitment.
    pub commitment: Commitment,
    /// The named delayed-value source, if any.
    pub delayed_source: Option<DelayedSource>,
    /// The drand round fixed at commit, if any.
    pub drand: Option<DrandRound>,
    /// Whether the drand round was declared stalled (the fallback round is then the one).
    pub drand_stalled: bool,
    /// The verified drand round bound, if any.
    pub drand_beacon: Option<DrandBeacon>,
    /// Contributions by seat: (player, contribution).
    pub contributions: BTreeMap<u32, (Uuid, Contribution)>,
    /// The bound delayed value.
    pub delayed_value: Option<DelayedValue>,
    /// The fixed client seed.
    pub client_seed: Option<String>,
    /// The revealed seed and why.
    pub revealed: Option<(ServerSeed, RevealReason)>,
}

impl TableCommitment {
    /// The event publishing a new table's commitment to `seed`.
    pub fn publish(
        table_id: Uuid,
        seed_id: Uuid,
        seed: &ServerSeed,
        delayed_source: Option<DelayedSource>,
        drand: Option<DrandRound>,
    ) -> TableEvent {
        TableEvent::Published {
            table_id,
            seed_id,
            commitment: seed.commitment(),
            delayed_source,
            drand,
        }
    }

    /// Folds a stream; `None` for an empty one.
    pub fn replay<'a>(
        events: impl IntoIterator<Item = &'a TableEvent>,
    ) -> Result<Option<Self>, DomainError> {
        let mut state: Option<Self> = None;
        for event in events {
            state = Some(Self::fold(state, event)?);
        }
        Ok(state)
    }

    /// Folds one event into the state (`None`: the event opens the stream).
    pub fn fold(state: Option<Self>, event: &TableEvent) -> Result<Self, DomainError> {
        Ok(match (state, event) {
            (
                None,
                TableEvent::Published {
                    table_id,
                    seed_id,
                    commitment,
                    delayed_source,
                    drand,
                },
            ) => TableCommitment {
                table_id: *table_id,
                seed_id: *seed_id,
                commitment: *commitment,
                delayed_source: delayed_source.clone(),
                drand: drand.clone(),
                drand_stalled: false,
                drand_beacon: None,
                contributions: BTreeMap::new(),
                delayed_value: None,
                client_seed: None,
                revealed: None,
            },
            (None, _) => {
                return Err(DomainError::Corrupt(
                    "table stream must start with Published",
                ));
            }
            (Some(mut s), e) => {
                s.apply(e)?;
                s
            }
        })
    }

    fn apply(&mut self, event: &TableEvent) -> Result<(), DomainError> {
        match event {
            TableEvent::Published { .. } => {
                return Err(DomainError::Corrupt("table published twice"));
            }
            TableEvent::Contributed {
                seat,
                player_id,
                contribution,
            } => {
                self.contributions
                    .insert(*seat, (*player_id, contribution.clone()));
            }
            TableEvent::DelayedValueBound { value, drand } => {
                self.delayed_value = Some(value.clone());
                self.drand_beacon = drand.clone();
            }
            TableEvent::DrandStalled { .. } => self.drand_stalled = true,
            TableEvent::ClientSeedFixed { client_seed, .. } => {
                self.client_seed = Some(client_seed.clone());
            }
            TableEvent::Revealed {
                server_seed,
                reason,
            } => self.revealed = Some((server_seed.clone(), reason.clone())),
        }
        Ok(())
    }

    fn require_open(&self, what: &'static str) -> Result<(), DomainError> {
        if self.revealed.is_some() {
            return Err(DomainError::AlreadyRevealed);
        }
        if self.client_seed.is_some() {
            return Err(DomainError::ClientSeedFixed(what));
        }
        Ok(())
    }

    /// A seated player's contribution: one per seat and per player, before the first deal.
    pub fn contribute(
        &self,
        seat: u32,
        player_id: Uuid,
        contribution: Contribution,
    ) -> Result<TableEvent, DomainError> {
        if seat > MAX_SEAT {
            return Err(DomainError::OutOfRange {
                field: "seat",
                reason: format!("{seat} is above {MAX_SEAT}"),
            });
        }
        self.require_open("a seed contribution")?;
        if self.contributions.contains_key(&seat) {
            return Err(DomainError::SeatAlreadyContributed(seat));
        }
        if let Some((other_seat, _)) = self
            .contributions
            .iter()
            .find(|(_, (player, _))| *player == player_id)
        {
            return Err(DomainError::PlayerAlreadyContributed(*other_seat));
        }
        Ok(TableEvent::Contributed {
            seat,
            player_id,
            contribution,
        })
    }

    /// Records the named delayed value, once, before the first deal.
    /// Refused for a table with a drand round: the service binds that one itself.
    pub fn bind_delayed_value(&self, value: DelayedValue) -> Result<TableEvent, DomainError> {
        self.require_open("a delayed value")?;
        self.refuse_value_by_hand()?;
        if self.delayed_source.is_none() {
            return Err(DomainError::NoDelayedSource);
        }
        if self.delayed_value.is_some() {
            return Err(DomainError::DelayedValueBound);
        }
        Ok(TableEvent::DelayedValueBound { value, drand: None })
    }

    /// Whether a hand may be dealt at `now` (Unix seconds): not from a timelocked table's
    /// latest end on, so that no hand starts after it and the seed, public from the timelock
    /// round on, is not the seed of a hand dealt since.
    pub fn may_deal_at(&self, now: u64) -> Result<(), DomainError> {
        match self.drand.as_ref().and_then(|d| d.timelock.as_ref()) {
            Some(timelock) if now >= timelock.latest_end => Err(DomainError::Timelock(format!(
                "the table's latest end ({} Unix seconds) has passed: no hand is dealt after it",
                timelock.latest_end
            ))),
            _ => Ok(()),
        }
    }

    /// The client seed for dealing: `Ok((seed, None))` when already fixed, `Ok((seed,
    /// Some(event)))` when this call fixes it (the first deal). Refused after the reveal and
    /// while a named delayed value is still unknown.
    pub fn client_seed_for_deal(&self) -> Result<(String, Option<TableEvent>), DomainError> {
        if self.revealed.is_some() {
            return Err(DomainError::AlreadyRevealed);
        }
        if let Some(seed) = &self.client_seed {
            return Ok((seed.clone(), None));
        }
        let delayed = match (&self.delayed_source, &self.delayed_value) {
            (Some(source), None) => {
                return Err(DomainError::DelayedValueMissing(source.as_str().to_owned()));
            }
            (_, value) => value.as_ref(),
        };
        let contributions: BTreeMap<u32, &str> = self
            .contributions
            .iter()
            .map(|(seat, (_, c))| (*seat, c.as_str()))
            .collect();
        let client_seed = table_client_seed(&contributions, delayed.map(DelayedValue::as_str));
        let event = TableEvent::ClientSeedFixed {
            client_seed: client_seed.clone(),
            contributions_hash: contributions_hash(&contributions),
        };
        Ok((client_seed, Some(event)))
    }

    /// Reveals the seed: at game end (only after a deal fixed the client seed) or by an
    /// operator at any time; never twice. `seed` is the decrypted sealed seed, checked
    /// against the commitment.
    pub fn reveal(
        &self,
        seed: &ServerSeed,
        reason: RevealReason,
    ) -> Result<TableEvent, DomainError> {
        if self.revealed.is_some() {
            return Err(DomainError::AlreadyRevealed);
        }
        if reason == RevealReason::Finished && self.client_seed.is_none() {
            return Err(DomainError::GameNotStarted);
        }
        if seed.commitment() != self.commitment {
            return Err(DomainError::SeedMismatch);
        }
        Ok(TableEvent::Revealed {
            server_seed: seed.clone(),
            reason,
        })
    }
}

/// A table's drand round: open until the client seed is fixed (the first deal) or the seed
/// revealed.
impl DrandSubject for TableCommitment {
    type Event = TableEvent;
    const SUBJECT: &'static str = "table";
    const NOT_FOUND: &'static str = "the table's commitment";

    fn drand(&self) -> Option<&DrandRound> {
        self.drand.as_ref()
    }

    fn drand_stalled(&self) -> bool {
        self.drand_stalled
    }

    fn delayed_value_bound(&self) -> bool {
        self.delayed_value.is_some()
    }

    fn open_for_delayed_value(&self) -> Result<(), DomainError> {
        self.require_open("a delayed value")
    }

    fn drand_bound(&self, value: DelayedValue, beacon: DrandBeacon) -> TableEvent {
        TableEvent::DelayedValueBound {
            value,
            drand: Some(beacon),
        }
    }

    fn drand_stalled_event(&self, drand: &DrandRound, reason: String) -> TableEvent {
        TableEvent::DrandStalled {
            round: drand.round,
            fallback_round: drand.fallback_round,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::drand::Timelock;
    use sha2::{Digest, Sha256};

    fn table(source: Option<&str>) -> (ServerSeed, Vec<TableEvent>) {
        let seed = ServerSeed::new("a".repeat(64));
        let source = source.map(|s| DelayedSource::parse(s).unwrap());
        let e = TableCommitment::publish(Uuid::now_v7(), Uuid::now_v7(), &seed, source, None);
        (seed, vec![e])
    }

    fn state(events: &[TableEvent]) -> TableCommitment {
        TableCommitment::replay(events).unwrap().unwrap()
    }

    fn c(s: &str) -> Contribution {
        Contribution::parse(s).unwrap()
    }

    #[test]
    fn no_hand_is_dealt_from_a_timelocked_tables_latest_end_on() {
        let seed = ServerSeed::new("a".repeat(64));
        let mut drand = DrandRound::new(&"ab".repeat(32), 10, 13).unwrap();
        drand.timelock = Some(Timelock::new(200, "ciphertext".into(), 1_000).unwrap());
        let e = TableCommitment::publish(Uuid::now_v7(), Uuid::now_v7(), &seed, None, Some(drand));
        let s = state(&[e]);
        assert_eq!(s.may_deal_at(999), Ok(()));
        for now in [1_000, 1_001, u64::MAX] {
            let refused = s.may_deal_at(now).unwrap_err();
            assert!(
                refused.to_string().starts_with("timelock_seconds: "),
                "{refused}"
            );
        }
        // Without a timelock, any time.
        let (_, events) = table(None);
        assert_eq!(state(&events).may_deal_at(u64::MAX), Ok(()));
        assert!(Timelock::new(0, "c".into(), 1).is_err());
        assert!(Timelock::new(1, String::new(), 1).is_err());
        assert!(Timelock::new(1, "c".into(), 0).is_err());
    }

    #[test]
    fn full_lifecycle() {
        let (seed, mut events) = table(Some("drand round 7"));
        for seat in 0..4 {
            let e = state(&events)
                .contribute(seat, Uuid::now_v7(), c(&format!("p{seat}")))
                .unwrap();
            events.push(e);
        }
        // Dealing is refused while the named value is unknown.
        assert_eq!(
            state(&events).client_seed_for_deal().unwrap_err(),
            DomainError::DelayedValueMissing("drand round 7".into())
        );
        let e = state(&events)
            .bind_delayed_value(DelayedValue::parse("beef").unwrap())
            .unwrap();
        events.push(e);
        let (client_seed, fix) = state(&events).client_seed_for_deal().unwrap();
        assert!(client_seed.ends_with(":beef"));
        events.push(fix.unwrap());
        // Second deal: same seed, no new event.
        assert_eq!(
            state(&events).client_seed_for_deal().unwrap(),
            (client_seed, None)
        );
        // No contribution or binding after the fix.
        let s = state(&events);
        assert_eq!(
            s.contribute(5, Uuid::now_v7(), c("late"))
                .unwrap_err()
                .class(),
            super::super::ErrorClass::FailedPrecondition
        );
        assert!(matches!(
            s.bind_delayed_value(DelayedValue::parse("x").unwrap()),
            Err(DomainError::ClientSeedFixed(_))
        ));
        let e = s.reveal(&seed, RevealReason::Finished).unwrap();
        events.push(e);
        let s = state(&events);
        assert_eq!(
            s.reveal(&seed, RevealReason::Finished),
            Err(DomainError::AlreadyRevealed)
        );
        assert_eq!(s.client_seed_for_deal(), Err(DomainError::AlreadyRevealed));
    }

    #[test]
    fn the_fixed_client_seed_has_the_documented_bytes() {
        // docs/commitment-and-dealing.md: seats 0 and 2 contribute "alpha" and "zz".
        let (_, mut events) = table(Some("lottery"));
        for (seat, text) in [(2, "zz"), (0, "alpha")] {
            let e = state(&events)
                .contribute(seat, Uuid::now_v7(), c(text))
                .unwrap();
            events.push(e);
        }
        let e = state(&events)
            .bind_delayed_value(DelayedValue::parse("07 12 23 34 45").unwrap())
            .unwrap();
        events.push(e);
        let hash = hex::encode(Sha256::digest(b"0:5:alpha\n2:2:zz\n"));
        let (client_seed, fix) = state(&events).client_seed_for_deal().unwrap();
        assert_eq!(client_seed, format!("{hash}:07 12 23 34 45"));
        assert_eq!(
            fix,
            Some(TableEvent::ClientSeedFixed {
                client_seed,
                contributions_hash: hash,
            })
        );
    }

    #[test]
    fn one_contribution_per_seat_and_player() {
        let (_, mut events) = table(None);
        let player = Uuid::now_v7();
        events.push(state(&events).contribute(1, player, c("x")).unwrap());
        let s = state(&events);
        assert_eq!(
            s.contribute(1, Uuid::now_v7(), c("y")),
            Err(DomainError::SeatAlreadyContributed(1))
        );
        assert_eq!(
            s.contribute(2, player, c("y")),
            Err(DomainError::PlayerAlreadyContributed(1))
        );
        assert!(matches!(
            s.contribute(MAX_SEAT + 1, Uuid::now_v7(), c("y")),
            Err(DomainError::OutOfRange { field: "seat", .. })
        ));
    }

    #[test]
    fn reveal_rules() {
        let (seed, events) = table(None);
        let s = state(&events);
        assert_eq!(
            s.reveal(&seed, RevealReason::Finished),
            Err(DomainError::GameNotStarted)
        );
        assert_eq!(
            s.reveal(
                &ServerSeed::new("other"),
                RevealReason::operator("ops", "abandoned").unwrap()
            ),
            Err(DomainError::SeedMismatch)
        );
        assert!(RevealReason::operator("", "why").is_err());
        assert!(RevealReason::operator("ops", " ").is_err());
        assert!(
            s.reveal(&seed, RevealReason::operator("ops", "abandoned").unwrap())
                .is_ok()
        );
        assert_eq!(
            s.bind_delayed_value(DelayedValue::parse("v").unwrap()),
            Err(DomainError::NoDelayedSource)
        );
    }

    #[test]
    fn replay_rejects_streams_out_of_order() {
        let (_, events) = table(None);
        let doubled = [events[0].clone(), events[0].clone()];
        assert!(TableCommitment::replay(&doubled).is_err());
        let headless = [TableEvent::DelayedValueBound {
            value: DelayedValue::parse("v").unwrap(),
            drand: None,
        }];
        assert!(TableCommitment::replay(&headless).is_err());
        assert_eq!(TableCommitment::replay(&[]).unwrap(), None);
    }

    #[test]
    fn debug_never_shows_the_seed() {
        let (seed, events) = table(None);
        let reveal = state(&events)
            .reveal(&seed, RevealReason::operator("ops", "test").unwrap())
            .unwrap();
        assert!(!format!("{reveal:?}").contains(seed.expose_secret()));
    }

    fn drand_table() -> Vec<TableEvent> {
        let seed = ServerSeed::new("b".repeat(64));
        let drand = DrandRound::new(&"ab".repeat(32), 100, 120).unwrap();
        let source = drand.source("test").unwrap();
        vec![TableCommitment::publish(
            Uuid::now_v7(),
            Uuid::now_v7(),
            &seed,
            Some(source),
            Some(drand),
        )]
    }

    fn beacon(round: u64) -> DrandBeacon {
        DrandBeacon {
            round,
            signature: "cd".repeat(48),
            randomness: format!("{round:064x}"),
        }
    }

    #[test]
    fn a_drand_table_binds_its_round_only_and_refuses_a_value_by_hand() {
        let mut events = drand_table();
        let s = state(&events);
        assert!(
            s.delayed_source
                .as_ref()
                .unwrap()
                .as_str()
                .contains("round 100, fallback 120")
        );
        let by_hand = s
            .bind_delayed_value(DelayedValue::parse("drand:123").unwrap())
            .unwrap_err();
        assert_eq!(
            by_hand,
            DomainError::DrandBindsItself {
                subject: "table",
                round: 100
            }
        );
        assert!(
            by_hand.to_string().starts_with("delayed_value: "),
            "{by_hand}"
        );
        assert_eq!(
            by_hand.class(),
            super::super::ErrorClass::FailedPrecondition
        );
        assert_eq!(s.drand_round_to_bind(), Some(100));
        assert_eq!(
            s.bind_drand(beacon(120)),
            Err(DomainError::DrandWrongRound {
                subject: "table",
                expected: 100,
                got: 120
            })
        );
        assert!(
            s.client_seed_for_deal().is_err(),
            "no deal before the round is bound"
        );
        events.push(s.bind_drand(beacon(100)).unwrap());
        let s = state(&events);
        assert_eq!(s.drand_beacon, Some(beacon(100)));
        assert_eq!(s.drand_round_to_bind(), None);
        let (client_seed, _) = s.client_seed_for_deal().unwrap();
        assert!(client_seed.ends_with(&format!(":{:064x}", 100)));
        assert_eq!(
            s.stall_drand("late".into()),
            Err(DomainError::DelayedValueBound)
        );
    }

    #[test]
    fn a_stalled_drand_round_gives_way_to_its_fallback_once() {
        let mut events = drand_table();
        events.push(state(&events).stall_drand("relays down".into()).unwrap());
        let s = state(&events);
        assert!(s.drand_stalled);
        assert_eq!(s.drand_round_to_bind(), Some(120));
        assert!(matches!(
            s.stall_drand("again".into()),
            Err(DomainError::DrandStall { .. })
        ));
        // The stalled round itself can no longer be bound, even if it shows up now.
        assert!(matches!(
            s.bind_drand(beacon(100)),
            Err(DomainError::DrandWrongRound { expected: 120, .. })
        ));
        events.push(s.bind_drand(beacon(120)).unwrap());
        assert_eq!(state(&events).drand_beacon.unwrap().round, 120);
        // A table without drand has nothing to stall.
        let (_, plain) = table(None);
        assert!(matches!(
            state(&plain).stall_drand("x".into()),
            Err(DomainError::DrandStall { .. })
        ));
    }
}
