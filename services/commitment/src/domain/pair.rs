//! A player's single-player seed pairs (SPEC section 4, "Single-player").
//!
//! One stream per user. Pair `k` (0, 1, ...) has a server seed shown only as its commitment,
//! the user's client seed (changeable at any time) and a bet counter: bet `n` of pair `k`
//! uses salt `n` (decimal), n = 0, 1, ... The counter is reserved in this stream
//! ([`PairEvent::NonceConsumed`]) so bets and rotations are serialised: once a rotation is
//! recorded no bet can use the revealed seed. The counter does not reset when the client
//! seed changes (so `(server seed, nonce)` never repeats); a rotation starts the new pair at
//! 0.
//!
//! A reservation may carry a bet id (an idempotency key): reserving again with the same id
//! returns the first reservation instead of a new nonce, so a bet whose reply was lost can
//! be retried without becoming a second bet. The last [`REMEMBERED_BETS`] ids of the stream
//! are remembered (rebuilt from the events, nothing else is stored).

use std::collections::VecDeque;

use fairdeal_fairness::commitment::{Commitment, ServerSeed};
use uuid::Uuid;

use super::DomainError;

/// Longest accepted client seed, in bytes.
pub const MAX_CLIENT_SEED_BYTES: usize = 128;

/// Longest accepted bet description, in bytes.
pub const MAX_BET_BYTES: usize = 128;

/// How many of a stream's latest reservations with a bet id can be retried.
pub const REMEMBERED_BETS: usize = 1000;

/// A player's client seed: 1 to 128 bytes of UTF-8 without control characters. Public.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientSeed(String);

impl ClientSeed {
    /// Validates a client seed.
    pub fn parse(value: &str) -> Result<Self, DomainError> {
        if value.is_empty() {
            return Err(DomainError::InvalidText {
                field: "client_seed",
                reason: "must not be empty".into(),
            });
        }
        super::check_bytes("client_seed", value, MAX_CLIENT_SEED_BYTES)?;
        Ok(ClientSeed(value.to_owned()))
    }

    /// The seed's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Everything that can happen to a user's seed pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairEvent {
    /// Pair `index` starts: a new server seed committed.
    Committed {
        /// The user.
        user_id: Uuid,
        /// 0 for the first pair, then +1 per rotation.
        index: u64,
        /// Where the sealed seed is kept.
        seed_id: Uuid,
        /// SHA-256 of the seed.
        commitment: Commitment,
        /// The client seed in force.
        client_seed: ClientSeed,
    },
    /// The user changed their client seed.
    ClientSeedChanged {
        /// The pair.
        index: u64,
        /// The new client seed.
        client_seed: ClientSeed,
    },
    /// A bet reserved the next counter value.
    NonceConsumed {
        /// The pair.
        index: u64,
        /// The counter value (the bet's salt).
        nonce: u64,
        /// The client seed the bet uses.
        client_seed: ClientSeed,
        /// The bet's idempotency key, if it had one.
        bet_id: Option<Uuid>,
        /// What the bet plays (`fairdeal outcome` arguments); empty in records made
        /// before bets were described.
        bet: String,
    },
    /// Pair `index` ended: its seed is revealed (a `Committed` for the next pair follows).
    Rotated {
        /// The pair.
        index: u64,
        /// The revealed seed (public from here; Debug redacts it all the same).
        server_seed: ServerSeed,
        /// How many bets the pair served (nonces 0..bets).
        bets: u64,
    },
}

/// The active pair of a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedPairs {
    /// The user.
    pub user_id: Uuid,
    /// The active pair's index.
    pub index: u64,
    /// The active seed's sealed-seed id.
    pub seed_id: Uuid,
    /// The active commitment.
    pub commitment: Commitment,
    /// The client seed in force.
    pub client_seed: ClientSeed,
    /// The next bet's counter value.
    pub next_nonce: u64,
    /// The latest reservations that had a bet id (all pairs), oldest first, at most
    /// [`REMEMBERED_BETS`].
    pub recent_bets: VecDeque<RememberedBet>,
}

/// A reservation that can be asked for again by its bet id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RememberedBet {
    /// The idempotency key.
    pub bet_id: Uuid,
    /// What the bet plays.
    pub bet: String,
    /// What it was given.
    pub seeds: BetSeeds,
}

/// A bet asking for a nonce, as the dealing service describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BetRequest {
    /// Idempotency key (`None`: the reservation cannot be asked for again).
    pub bet_id: Option<Uuid>,
    /// What the bet plays, as the `fairdeal outcome` arguments that replay it.
    pub bet: String,
}

impl BetRequest {
    /// Validates the wire fields: `bet_id` empty or a UUID, `bet` 1 to 128 bytes without
    /// control characters.
    pub fn parse(bet_id: &str, bet: &str) -> Result<Self, DomainError> {
        let bet_id = if bet_id.is_empty() {
            None
        } else {
            Some(super::parse_uuid("bet_id", bet_id)?)
        };
        let invalid = |reason: String| DomainError::InvalidText {
            field: "bet",
            reason,
        };
        if bet.is_empty() {
            return Err(invalid("is required".into()));
        }
        if bet.len() > MAX_BET_BYTES {
            return Err(invalid(format!(
                "is {} bytes, at most {MAX_BET_BYTES} allowed",
                bet.len()
            )));
        }
        if bet.chars().any(char::is_control) {
            return Err(invalid("contains control characters".into()));
        }
        Ok(BetRequest {
            bet_id,
            bet: bet.to_owned(),
        })
    }
}

/// What [`SeedPairs::reserve`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// A new nonce, reserved by the event.
    New(BetSeeds, PairEvent),
    /// The bet id was reserved before: the same seeds again, nothing to record.
    Earlier(BetSeeds),
}

/// The seeds a bet uses, returned by [`SeedPairs::consume_nonce`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BetSeeds {
    /// The pair.
    pub index: u64,
    /// The counter value.
    pub nonce: u64,
    /// The client seed.
    pub client_seed: ClientSeed,
}

impl SeedPairs {
    /// The first pair of a user.
    pub fn open(
        user_id: Uuid,
        seed_id: Uuid,
        seed: &ServerSeed,
        client_seed: ClientSeed,
    ) -> PairEvent {
        PairEvent::Committed {
            user_id,
            index: 0,
            seed_id,
            commitment: seed.commitment(),
            client_seed,
        }
    }

    /// Folds a stream; `None` for an empty one.
    pub fn replay<'a>(
        events: impl IntoIterator<Item = &'a PairEvent>,
    ) -> Result<Option<Self>, DomainError> {
        let mut state: Option<Self> = None;
        for event in events {
            state = Some(Self::fold(state, event)?);
        }
        Ok(state)
    }

    /// Folds one event into the state (`None`: the event opens the stream).
    pub fn fold(state: Option<Self>, event: &PairEvent) -> Result<Self, DomainError> {
        Ok(match (state, event) {
            (
                previous,
                PairEvent::Committed {
                    user_id,
                    index,
                    seed_id,
                    commitment,
                    client_seed,
                },
            ) => SeedPairs {
                user_id: *user_id,
                index: *index,
                seed_id: *seed_id,
                commitment: *commitment,
                client_seed: client_seed.clone(),
                next_nonce: 0,
                // Retries of bets on earlier pairs still find their reservation.
                recent_bets: previous.map(|s| s.recent_bets).unwrap_or_default(),
            },
            (None, _) => {
                return Err(DomainError::Corrupt(
                    "pair stream must start with Committed",
                ));
            }
            (Some(mut s), PairEvent::ClientSeedChanged { client_seed, .. }) => {
                s.client_seed = client_seed.clone();
                s
            }
            (
                Some(mut s),
                PairEvent::NonceConsumed {
                    index,
                    nonce,
                    client_seed,
                    bet_id,
                    bet,
                },
            ) => {
                s.next_nonce = nonce
                    .checked_add(1)
                    .ok_or(DomainError::Corrupt("nonce overflow"))?;
                if let Some(bet_id) = bet_id {
                    if s.recent_bets.len() == REMEMBERED_BETS {
                        s.recent_bets.pop_front();
                    }
                    s.recent_bets.push_back(RememberedBet {
                        bet_id: *bet_id,
                        bet: bet.clone(),
                        seeds: BetSeeds {
                            index: *index,
                            nonce: *nonce,
                            client_seed: client_seed.clone(),
                        },
                    });
                }
                s
            }
            // The Committed event that always follows makes the new pair active.
            (Some(s), PairEvent::Rotated { .. }) => s,
        })
    }

    /// Changes the client seed; the counter goes on.
    pub fn change_client_seed(&self, client_seed: ClientSeed) -> PairEvent {
        PairEvent::ClientSeedChanged {
            index: self.index,
            client_seed,
        }
    }

    /// Reserves the next counter value for `request`, or returns the reservation its bet
    /// id already has.
    ///
    /// The same bet id for another bet is [`DomainError::BetIdReused`]; for a bet of a
    /// pair rotated since, [`DomainError::BetPairRotated`] (its seed is revealed: it cannot
    /// be played again, and it was reserved once already).
    pub fn reserve(&self, request: &BetRequest) -> Result<Reservation, DomainError> {
        if let Some(bet_id) = request.bet_id
            && let Some(earlier) = self.recent_bets.iter().rev().find(|r| r.bet_id == bet_id)
        {
            if earlier.bet != request.bet {
                return Err(DomainError::BetIdReused(earlier.bet.clone()));
            }
            if earlier.seeds.index != self.index {
                return Err(DomainError::BetPairRotated(earlier.seeds.index));
            }
            return Ok(Reservation::Earlier(earlier.seeds.clone()));
        }
        // u64::MAX stays unused so `next_nonce` can always be represented after the bet.
        if self.next_nonce == u64::MAX {
            return Err(DomainError::NonceExhausted);
        }
        let seeds = BetSeeds {
            index: self.index,
            nonce: self.next_nonce,
            client_seed: self.client_seed.clone(),
        };
        let event = PairEvent::NonceConsumed {
            index: self.index,
            nonce: self.next_nonce,
            client_seed: self.client_seed.clone(),
            bet_id: request.bet_id,
            bet: request.bet.clone(),
        };
        Ok(Reservation::New(seeds, event))
    }

    /// Reveals the active seed (`old_seed`, decrypted and checked against the commitment)
    /// and commits `new_seed`; the client seed carries over.
    pub fn rotate(
        &self,
        old_seed: &ServerSeed,
        new_seed_id: Uuid,
        new_seed: &ServerSeed,
    ) -> Result<[PairEvent; 2], DomainError> {
        if old_seed.commitment() != self.commitment {
            return Err(DomainError::SeedMismatch);
        }
        let next = self
            .index
            .checked_add(1)
            .ok_or(DomainError::Corrupt("pair index overflow"))?;
        Ok([
            PairEvent::Rotated {
                index: self.index,
                server_seed: old_seed.clone(),
                bets: self.next_nonce,
            },
            PairEvent::Committed {
                user_id: self.user_id,
                index: next,
                seed_id: new_seed_id,
                commitment: new_seed.commitment(),
                client_seed: self.client_seed.clone(),
            },
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bets_rotation_and_client_seed_changes() {
        let user = Uuid::now_v7();
        let s0 = ServerSeed::new("s0");
        let mut events = vec![SeedPairs::open(
            user,
            Uuid::now_v7(),
            &s0,
            ClientSeed::parse("mine").unwrap(),
        )];
        let state = |e: &[PairEvent]| SeedPairs::replay(e).unwrap().unwrap();
        for n in 0..3 {
            let (bet, e) = new(state(&events).reserve(&dice(None)).unwrap());
            assert_eq!((bet.index, bet.nonce), (0, n));
            events.push(e);
        }
        events.push(state(&events).change_client_seed(ClientSeed::parse("new").unwrap()));
        let (bet, e) = new(state(&events).reserve(&dice(None)).unwrap());
        assert_eq!((bet.nonce, bet.client_seed.as_str()), (3, "new"));
        events.push(e);
        let s1 = ServerSeed::new("s1");
        assert_eq!(
            state(&events).rotate(&ServerSeed::new("wrong"), Uuid::now_v7(), &s1),
            Err(DomainError::SeedMismatch)
        );
        let rotated = state(&events).rotate(&s0, Uuid::now_v7(), &s1).unwrap();
        assert!(matches!(
            rotated[0],
            PairEvent::Rotated {
                bets: 4,
                index: 0,
                ..
            }
        ));
        events.extend(rotated);
        let s = state(&events);
        assert_eq!((s.index, s.next_nonce), (1, 0));
        assert_eq!(s.commitment, s1.commitment());
        assert_eq!(s.client_seed.as_str(), "new");
    }

    #[test]
    fn counter_exhaustion_is_an_error() {
        let s = SeedPairs {
            user_id: Uuid::nil(),
            index: 0,
            seed_id: Uuid::nil(),
            commitment: Commitment::of("x"),
            client_seed: ClientSeed::parse("c").unwrap(),
            next_nonce: u64::MAX,
            recent_bets: VecDeque::new(),
        };
        assert_eq!(
            s.reserve(&dice(None)).unwrap_err(),
            DomainError::NonceExhausted
        );
    }

    fn dice(bet_id: Option<Uuid>) -> BetRequest {
        BetRequest {
            bet_id,
            bet: "dice".into(),
        }
    }

    fn new(reservation: Reservation) -> (BetSeeds, PairEvent) {
        match reservation {
            Reservation::New(seeds, event) => (seeds, event),
            Reservation::Earlier(seeds) => panic!("expected a new nonce, got {seeds:?}"),
        }
    }

    #[test]
    fn a_bet_id_reserves_once() {
        let s0 = ServerSeed::new("s0");
        let mut events = vec![SeedPairs::open(
            Uuid::now_v7(),
            Uuid::now_v7(),
            &s0,
            ClientSeed::parse("mine").unwrap(),
        )];
        let state = |e: &[PairEvent]| SeedPairs::replay(e).unwrap().unwrap();
        let id = Uuid::now_v7();
        let (first, e) = new(state(&events).reserve(&dice(Some(id))).unwrap());
        events.push(e);
        let (_, e) = new(state(&events).reserve(&dice(Some(Uuid::now_v7()))).unwrap());
        events.push(e);
        // The client seed changes; the retry still gets the seeds it was reserved with.
        events.push(state(&events).change_client_seed(ClientSeed::parse("new").unwrap()));
        assert_eq!(
            state(&events).reserve(&dice(Some(id))),
            Ok(Reservation::Earlier(first.clone()))
        );
        // The same id for another bet is refused.
        let other = BetRequest {
            bet_id: Some(id),
            bet: "mines --mines 3".into(),
        };
        assert_eq!(
            state(&events).reserve(&other),
            Err(DomainError::BetIdReused("dice".into()))
        );
        // After a rotation the bet cannot be retried (its seed is public).
        let rotated = state(&events)
            .rotate(&s0, Uuid::now_v7(), &ServerSeed::new("s1"))
            .unwrap();
        events.extend(rotated);
        assert_eq!(
            state(&events).reserve(&dice(Some(id))),
            Err(DomainError::BetPairRotated(0))
        );
        assert_eq!(state(&events).next_nonce, 0);
    }

    #[test]
    fn only_the_latest_bet_ids_are_remembered() {
        let mut events = vec![SeedPairs::open(
            Uuid::now_v7(),
            Uuid::now_v7(),
            &ServerSeed::new("s0"),
            ClientSeed::parse("mine").unwrap(),
        )];
        let ids: Vec<Uuid> = (0..=REMEMBERED_BETS).map(|_| Uuid::now_v7()).collect();
        for (nonce, id) in ids.iter().enumerate() {
            events.push(PairEvent::NonceConsumed {
                index: 0,
                nonce: nonce as u64,
                client_seed: ClientSeed::parse("mine").unwrap(),
                bet_id: Some(*id),
                bet: "dice".into(),
            });
        }
        let s = SeedPairs::replay(&events).unwrap().unwrap();
        assert_eq!(s.recent_bets.len(), REMEMBERED_BETS);
        // The oldest id is forgotten: asking with it is a new bet.
        assert!(matches!(
            s.reserve(&dice(Some(ids[0]))),
            Ok(Reservation::New(..))
        ));
        assert!(matches!(
            s.reserve(&dice(Some(ids[1]))),
            Ok(Reservation::Earlier(BetSeeds { nonce: 1, .. }))
        ));
    }

    #[test]
    fn bet_requests_name_the_bad_field() {
        let err = BetRequest::parse("nope", "dice").unwrap_err().to_string();
        assert!(err.starts_with("bet_id"), "{err}");
        for bad in ["", "dice\n", &"x".repeat(129)] {
            let err = BetRequest::parse("", bad).unwrap_err().to_string();
            assert!(err.starts_with("bet "), "{bad:?}: {err}");
        }
        let id = Uuid::now_v7();
        assert_eq!(
            BetRequest::parse(&id.to_string(), "mines --mines 3"),
            Ok(BetRequest {
                bet_id: Some(id),
                bet: "mines --mines 3".into()
            })
        );
    }

    #[test]
    fn client_seed_rules_name_the_field() {
        let err = ClientSeed::parse(&"x".repeat(129)).unwrap_err().to_string();
        assert!(err.starts_with("client_seed"), "{err}");
        let err = ClientSeed::parse("").unwrap_err().to_string();
        assert!(err.starts_with("client_seed"), "{err}");
    }
}
