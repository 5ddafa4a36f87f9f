//! The rules of `RULES.md` on scripted deals, through `decide` and `apply`, checking after
//! every refusal that nothing changed.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_table_game::{Actor, Seat, TableGame};
use fairdeal_tarot::{
    Card, CardSet, Chelem, Command, Contract, ContractError, DealScore, Event, Phase, Poignee,
    RuleError, Suit, Tarot, TarotCards, TarotOptions,
};

fn seat(n: u8) -> Seat {
    Seat::new(n).unwrap()
}

fn card(code: &str) -> Card {
    code.parse().unwrap()
}

fn set(codes: &str) -> CardSet {
    codes.split_whitespace().map(card).collect()
}

/// A table driven by hand.
struct Table {
    game: Tarot,
    events: Vec<Event>,
}

impl Table {
    fn new(seats: u8, rounds: u8, first_dealer: u8) -> Table {
        let mut t = Table {
            game: Tarot::new(),
            events: Vec::new(),
        };
        let start =
            <Tarot as TableGame>::start(&TarotOptions { seats, rounds }, seat(first_dealer));
        t.run(Actor::Table, start).unwrap();
        t
    }

    fn seats(&self) -> usize {
        self.game.options().unwrap().seat_count()
    }

    fn run(&mut self, actor: Actor, command: Command) -> Result<Vec<Event>, RuleError> {
        let before = self.game.clone();
        match self.game.decide(actor, &command) {
            Ok(events) => {
                for e in &events {
                    self.game.apply(e);
                }
                self.events.extend(events.iter().cloned());
                Ok(events)
            }
            Err(e) => {
                assert_eq!(self.game, before, "a refused command changed the state");
                Err(e)
            }
        }
    }

    /// Deals: the cards given per seat, the chien given, every other card to the seats in
    /// canonical order filling each hand.
    fn deal(&mut self, fixed: &[(u8, &str)], chien: &str) -> Result<Vec<Event>, RuleError> {
        let options = self.game.options().unwrap();
        let seats = self.seats();
        let chien = set(chien);
        let mut by_seat = vec![CardSet::EMPTY; seats];
        for (s, codes) in fixed {
            by_seat[usize::from(*s)] = set(codes);
        }
        let used = by_seat.iter().fold(chien, |a, h| a.union(*h));
        let mut rest = CardSet::ALL.difference(used).iter();
        let mut chien_cards = chien.to_vec();
        while chien_cards.len() < options.chien_len() {
            chien_cards.push(rest.next().unwrap());
        }
        for hand in by_seat.iter_mut() {
            while hand.len() < options.hand_len() {
                hand.insert(rest.next().unwrap());
            }
        }
        let dealer = self.game.next_dealer();
        let hands = (1..=seats)
            .map(|k| by_seat[dealer.offset(k, seats).index()].to_vec())
            .collect();
        self.run(
            Actor::Table,
            Command::StartDeal {
                hands,
                chien: chien_cards,
            },
        )
    }

    fn act(&mut self, s: u8, command: Command) -> Result<Vec<Event>, RuleError> {
        self.run(Actor::Seat(seat(s)), command)
    }

    fn bid(&mut self, s: u8, contract: Contract) -> Result<Vec<Event>, RuleError> {
        self.act(s, Command::Bid { contract })
    }

    fn pass(&mut self, s: u8) -> Result<Vec<Event>, RuleError> {
        self.act(s, Command::Pass)
    }

    fn play(&mut self, s: u8, code: &str) -> Result<Vec<Event>, RuleError> {
        self.act(s, Command::PlayCard { card: card(code) })
    }

    /// `taker` bids `contract` at its turn, everybody else passes.
    fn auction(&mut self, taker: u8, contract: Contract) {
        while self.game.phase() == Phase::Bidding {
            let turn = self.game.turn().unwrap();
            if turn == seat(taker) {
                self.bid(taker, contract).unwrap();
            } else {
                self.pass(turn.number()).unwrap();
            }
        }
    }

    /// Makes the écart with the first legal discards and announces no chelem.
    fn ecart_and_no_chelem(&mut self) {
        while self.game.phase() == Phase::Discarding {
            let turn = self.game.turn().unwrap();
            let first = self.game.legal_commands(turn).remove(0);
            self.run(Actor::Seat(turn), first).unwrap();
        }
        let taker = self.game.turn().unwrap();
        self.run(
            Actor::Seat(taker),
            Command::DeclareChelem { announce: false },
        )
        .unwrap();
    }

    /// Plays the rest of the deal, `choose` picking each card among the legal ones.
    fn play_out(&mut self, choose: impl Fn(Seat, &[Card]) -> Card) {
        while self.game.phase() == Phase::Playing {
            let turn = self.game.turn().unwrap();
            let cards: Vec<Card> = self
                .game
                .legal_commands(turn)
                .into_iter()
                .filter_map(|c| match c {
                    Command::PlayCard { card } => Some(card),
                    _ => None,
                })
                .collect();
            let card = choose(turn, &cards);
            self.run(Actor::Seat(turn), Command::PlayCard { card })
                .unwrap();
        }
    }

    fn last_score(&self) -> DealScore {
        self.game.last_score().unwrap().clone()
    }
}

fn first(_: Seat, cards: &[Card]) -> Card {
    cards[0]
}

#[test]
fn the_seat_after_the_dealer_speaks_first_each_once_and_bids_climb() {
    let mut t = Table::new(4, 1, 2);
    t.deal(&[(0, "T1 T2")], "").unwrap();
    assert_eq!(t.game.turn(), Some(seat(3)));
    assert_eq!(
        t.bid(0, Contract::Petite),
        Err(RuleError::Contract(ContractError::NotYourTurn {
            seat: seat(0),
            turn: Some(seat(3))
        }))
    );
    t.bid(3, Contract::Garde).unwrap();
    assert_eq!(
        t.bid(0, Contract::Garde),
        Err(RuleError::BidTooLow {
            bid: Contract::Garde,
            highest: Contract::Garde
        })
    );
    assert_eq!(
        t.game.legal_commands(seat(0)),
        [
            Command::Pass,
            Command::Bid {
                contract: Contract::GardeSans
            },
            Command::Bid {
                contract: Contract::GardeContre
            }
        ]
    );
    t.bid(0, Contract::GardeSans).unwrap();
    t.pass(1).unwrap();
    // The last to speak: seat 3 does not speak again; seat 0 takes.
    let events = t.pass(2).unwrap();
    assert_eq!(
        events[1],
        Event::AuctionWon {
            seat: seat(0),
            contract: Contract::GardeSans
        }
    );
    // Garde sans: no chien shown, straight to the chelem announcement.
    assert_eq!(t.game.phase(), Phase::Announcing);
    assert!(t.game.public_view().chien.is_empty());
    assert_eq!(t.game.turn(), Some(seat(0)));
}

#[test]
fn a_garde_contre_ends_the_auction_at_once() {
    let mut t = Table::new(3, 1, 0);
    t.deal(&[(0, "T1 T2")], "").unwrap();
    let events = t.bid(1, Contract::GardeContre).unwrap();
    assert_eq!(
        events,
        [
            Event::BidPlaced {
                seat: seat(1),
                contract: Contract::GardeContre
            },
            Event::AuctionWon {
                seat: seat(1),
                contract: Contract::GardeContre
            }
        ]
    );
}

#[test]
fn when_all_pass_the_deal_is_void_and_passes_to_the_next_dealer() {
    let mut t = Table::new(4, 1, 1);
    t.deal(&[(0, "T1 T2")], "").unwrap();
    for s in [2, 3, 0] {
        t.pass(s).unwrap();
    }
    let events = t.pass(1).unwrap();
    assert_eq!(events[1], Event::AllPassed { deal: 0 });
    assert_eq!(TableGame::deal_due(&t.game), Some(1));
    assert_eq!(t.game.next_dealer(), seat(2));
    assert_eq!(t.game.scores(), [0, 0, 0, 0]);
}

#[test]
fn a_petit_sec_annuls_the_deal() {
    let mut t = Table::new(4, 1, 0);
    // Seat 2: the petit its only trump, no excuse.
    let events = t
        .deal(
            &[
                (2, "T1 1S 2S 3S 4S 5S 6S 7S 8S 9S 10S JS NS QS KS 1H 2H 3H"),
                (0, "EX T2 T3"),
            ],
            "",
        )
        .unwrap();
    assert_eq!(
        events[1],
        Event::DealAnnulled {
            deal: 0,
            seat: seat(2)
        }
    );
    assert_eq!(t.game.phase(), Phase::AwaitingDeal);
}

#[test]
fn the_ecart_takes_no_king_nor_oudler_and_trumps_only_when_forced() {
    let mut t = Table::new(4, 1, 3);
    // Seat 0: four kings, three oudlers and eleven trumps; the chien has four plain cards.
    t.deal(
        &[(
            0,
            "KS KH KD KC T1 T21 EX T2 T3 T4 T5 T6 T7 T8 T9 T10 T11 T12",
        )],
        "2S 3S 4S 5S T13 T14",
    )
    .unwrap();
    t.auction(0, Contract::Garde);
    assert_eq!(t.game.public_view().chien.len(), 6);
    assert_eq!(t.game.hand_of(seat(0)).len(), 24);
    let discard = |t: &mut Table, code: &str| t.act(0, Command::Discard { card: card(code) });
    assert_eq!(
        discard(&mut t, "KS"),
        Err(RuleError::DiscardKing { card: card("KS") })
    );
    assert_eq!(
        discard(&mut t, "T21"),
        Err(RuleError::DiscardOudler { card: card("T21") })
    );
    assert_eq!(
        discard(&mut t, "EX"),
        Err(RuleError::DiscardOudler { card: card("EX") })
    );
    // Four plain cards for six places: two trumps are forced, so trumps may go.
    discard(&mut t, "T13").unwrap();
    for code in ["2S", "3S", "4S"] {
        discard(&mut t, code).unwrap();
    }
    // Two places left, one plain card (5S): a trump is still forced.
    discard(&mut t, "T14").unwrap();
    discard(&mut t, "5S").unwrap();
    assert_eq!(t.game.phase(), Phase::Announcing);
    // Trumps in the écart are shown to all; the rest only to the taker.
    let public = t.game.public_view();
    assert_eq!(public.ecart_trumps, [card("T13"), card("T14")]);
    assert_eq!(public.ecart_len, 6);
    assert_eq!(
        TableGame::seat_view(&t.game, seat(0)).unwrap().ecart.len(),
        6
    );
    assert!(
        TableGame::seat_view(&t.game, seat(1))
            .unwrap()
            .ecart
            .is_empty()
    );
}

#[test]
fn a_trump_is_refused_in_the_ecart_while_plain_cards_can_go() {
    let mut t = Table::new(4, 1, 3);
    t.deal(
        &[(0, "T1 T2 T3 KS 2S 3S 4S 5S 6S 7S 8S 9S 10S 2H 3H 4H 5H 6H")],
        "",
    )
    .unwrap();
    t.auction(0, Contract::Petite);
    assert_eq!(
        t.act(0, Command::Discard { card: card("T2") }),
        Err(RuleError::DiscardTrumpNotForced { card: card("T2") })
    );
    assert!(t.game.legal_commands(seat(0)).iter().all(|c| match c {
        Command::Discard { card } => card.suit().is_some() && !card.is_king(),
        _ => false,
    }));
}

/// Same deal and same play at a garde sans and a garde contre: the chien counts for the
/// taker in the first, for the defence in the second.
#[test]
fn the_unseen_chien_counts_for_the_taker_or_the_defence() {
    let score = |contract| {
        let mut t = Table::new(4, 1, 3);
        t.deal(&[(0, "T1 T2 T3")], "KH QH NH JH 1C 2C").unwrap();
        t.auction(0, contract);
        t.act(0, Command::DeclareChelem { announce: false })
            .unwrap();
        t.play_out(first);
        t.last_score()
    };
    let sans = score(Contract::GardeSans);
    let contre = score(Contract::GardeContre);
    assert_eq!(
        sans.half_points - contre.half_points,
        set("KH QH NH JH 1C 2C").half_points()
    );
    assert_eq!(sans.deltas.iter().sum::<i32>(), 0);
}

#[test]
fn at_five_the_taker_calls_a_king_and_shares_with_the_partner() {
    let mut t = Table::new(5, 1, 0);
    t.deal(&[(1, "T1 T2 T21 KS"), (3, "KH 2H")], "").unwrap();
    t.auction(1, Contract::Garde);
    assert_eq!(t.game.phase(), Phase::Calling);
    assert_eq!(
        t.act(1, Command::CallKing { card: card("QH") }),
        Err(RuleError::NotCallable { card: card("QH") })
    );
    let events = t.act(1, Command::CallKing { card: card("KH") }).unwrap();
    assert!(matches!(events[1], Event::ChienShown { .. }));
    assert_eq!(t.game.public_view().called, Some(card("KH")));
    t.ecart_and_no_chelem();
    // The first lead may not be a heart, other than the called king.
    let leader = t.game.turn().unwrap();
    let hearts = t.game.hand_of(leader).of_suit(Suit::Hearts);
    if let Some(heart) = hearts.iter().find(|c| *c != card("KH"))
        && hearts.len() < t.game.hand_of(leader).len()
    {
        assert_eq!(
            t.act(leader.number(), Command::PlayCard { card: heart }),
            Err(RuleError::CalledSuitLead {
                suit: Suit::Hearts,
                card: heart
            })
        );
    }
    t.play_out(first);
    let s = t.last_score();
    assert_eq!((s.called, s.partner), (Some(card("KH")), Some(seat(3))));
    assert_eq!(s.deltas[1], 2 * s.value);
    assert_eq!(s.deltas[3], s.value);
    for defender in [0, 2, 4] {
        assert_eq!(s.deltas[defender], -s.value);
    }
}

#[test]
fn calling_ones_own_king_is_playing_alone() {
    let mut t = Table::new(5, 1, 0);
    t.deal(&[(1, "T1 T2 T21 KS")], "").unwrap();
    t.auction(1, Contract::GardeSans);
    t.act(1, Command::CallKing { card: card("KS") }).unwrap();
    t.act(1, Command::DeclareChelem { announce: false })
        .unwrap();
    t.play_out(first);
    let s = t.last_score();
    assert_eq!(s.partner, None);
    assert_eq!(s.deltas[1], 4 * s.value);
}

#[test]
fn a_poignee_is_shown_before_ones_first_card_and_scores_for_the_winners() {
    let mut t = Table::new(4, 1, 3);
    // Seat 0 leads (the dealer is 3) with eleven trumps and the excuse.
    t.deal(&[(0, "T1 T2 T3 T4 T5 T6 T7 T8 T9 T10 T11 EX")], "")
        .unwrap();
    t.auction(1, Contract::GardeSans);
    t.act(1, Command::DeclareChelem { announce: false })
        .unwrap();
    assert_eq!(t.game.turn(), Some(seat(0)));
    let show = |codes: &str| Command::ShowPoignee {
        trumps: set(codes).to_vec(),
    };
    // The excuse with a trump hidden is refused.
    assert_eq!(
        t.act(0, show("T1 T2 T3 T4 T5 T6 T7 T8 T9 EX")),
        Err(RuleError::PoigneeExcuseHidesTrump)
    );
    assert_eq!(
        t.act(0, show("T1 T2 T3 T4 T5 T6 T7 T8 T9 T10 T11")),
        Err(RuleError::PoigneeSize {
            count: 11,
            seats: 4
        })
    );
    let legal = t.game.legal_commands(seat(0));
    assert!(legal.contains(&show("T1 T2 T3 T4 T5 T6 T7 T8 T9 T10")));
    t.act(0, show("T2 T3 T4 T5 T6 T7 T8 T9 T10 T11")).unwrap();
    assert_eq!(
        t.act(0, show("T1 T2 T3 T4 T5 T6 T7 T8 T9 T10")),
        Err(RuleError::PoigneeTooLate)
    );
    assert_eq!(t.game.public_view().poignees[0].poignee, Poignee::Simple);
    t.play_out(first);
    let s = t.last_score();
    assert_eq!(s.poignees, [Poignee::Simple]);
    let without = fairdeal_tarot::scoring::contract_score(
        s.contract,
        s.half_points,
        s.oudlers,
        s.petit_au_bout,
        &[],
        s.chelem,
    );
    // The defender's poignée goes to whichever side won the contract.
    assert_eq!(s.value - without.value, if s.made { 20 } else { -20 });
}

#[test]
fn an_announced_chelem_leads_and_the_excuse_wins_the_last_trick() {
    let mut t = Table::new(4, 1, 0);
    // Seat 2 holds every trump from 5 to 21 and the excuse; seat 3 the four low trumps.
    t.deal(
        &[
            (
                2,
                "T5 T6 T7 T8 T9 T10 T11 T12 T13 T14 T15 T16 T17 T18 T19 T20 T21 EX",
            ),
            (3, "T1 T2 T3 T4"),
        ],
        "",
    )
    .unwrap();
    t.auction(2, Contract::GardeSans);
    t.act(2, Command::DeclareChelem { announce: true }).unwrap();
    // The taker leads although seat 1 follows the dealer.
    assert_eq!(t.game.turn(), Some(seat(2)));
    assert_eq!(t.game.public_view().chelem_announced, Some(true));
    // The taker plays its highest trump, the excuse last.
    t.play_out(|s, cards| {
        if s == seat(2) {
            *cards.iter().rfind(|c| c.is_trump()).unwrap_or(&cards[0])
        } else {
            cards[0]
        }
    });
    let tricks: Vec<&Event> = t
        .events
        .iter()
        .filter(|e| matches!(e, Event::TrickWon { .. }))
        .collect();
    assert_eq!(tricks.len(), 18);
    assert!(
        tricks
            .iter()
            .all(|e| matches!(e, Event::TrickWon { seat: s, .. } if *s == seat(2)))
    );
    let s = t.last_score();
    assert_eq!(s.chelem, Chelem::AnnouncedMade);
    // 91 points with the three oudlers (the petit fell to a trump).
    assert_eq!((s.half_points, s.oudlers), (182, 3));
    assert_eq!(s.value, (25 + 55) * 4 + 400);
    assert_eq!(s.deltas, [-s.value, -s.value, 3 * s.value, -s.value]);
}

#[test]
fn follow_trump_and_overtrump_are_enforced_in_play() {
    let mut t = Table::new(3, 1, 2);
    t.deal(
        &[(0, "KS 2S T10 T20"), (1, "3S T5 T15"), (2, "T1 T2 T3 EX")],
        "",
    )
    .unwrap();
    t.auction(0, Contract::GardeSans);
    t.act(0, Command::DeclareChelem { announce: false })
        .unwrap();
    assert_eq!(t.game.turn(), Some(seat(0)));
    t.play(0, "KS").unwrap();
    assert_eq!(
        t.play(1, "T5"),
        Err(RuleError::MustFollowSuit {
            suit: Suit::Spades,
            card: card("T5")
        })
    );
    t.play(1, "3S").unwrap();
    // Seat 2 holds no spade: it must trump (or play the excuse).
    let hand = t.game.hand_of(seat(2));
    assert!(hand.of_suit(Suit::Spades).is_empty());
    let plain = hand.iter().find(|c| c.suit().is_some()).unwrap();
    assert_eq!(
        t.play(2, plain.code()),
        Err(RuleError::MustTrump { card: plain })
    );
    t.play(2, "T2").unwrap();
    assert!(matches!(
        t.events.last(),
        Some(Event::TrickWon { seat: s, .. }) if *s == seat(2)
    ));
}

#[test]
fn a_match_is_its_deals_and_ends_with_placings() {
    let mut t = Table::new(3, 1, 0);
    for deal in 0..3 {
        t.deal(&[(0, "T1 T2")], "").unwrap();
        for _ in 0..3 {
            let turn = t.game.turn().unwrap();
            t.pass(turn.number()).unwrap();
        }
        assert_eq!(t.game.next_dealer(), seat((deal + 1) % 3));
    }
    assert!(matches!(t.events.last(), Some(Event::MatchEnded { .. })));
    assert_eq!(t.game.phase(), Phase::Finished);
    assert_eq!(
        t.deal(&[(0, "T1 T2")], ""),
        Err(RuleError::Contract(ContractError::MatchOver))
    );
    let outcome = TableGame::outcome(&t.game).unwrap();
    assert_eq!(outcome.placings, [1, 1, 1]);
    assert_eq!(<Tarot as TableGame>::verify(&t.events), Ok(t.game.clone()));
}

#[test]
fn deals_seats_and_actors_are_checked() {
    let mut t = Table::new(4, 1, 0);
    assert_eq!(
        t.run(
            Actor::Table,
            Command::StartDeal {
                hands: vec![Vec::new(); 3],
                chien: Vec::new()
            }
        ),
        Err(RuleError::BadDeal(
            fairdeal_tarot::DealError::WrongHandCount {
                found: 3,
                expected: 4
            }
        ))
    );
    t.deal(&[(0, "T1 T2")], "").unwrap();
    let turn = t.game.turn().unwrap();
    assert_eq!(
        t.act(4, Command::Pass),
        Err(RuleError::Contract(ContractError::NoSuchSeat {
            seat: 4,
            seats: 4
        }))
    );
    assert!(TableGame::seat_view(&t.game, seat(4)).is_none());
    assert_eq!(
        t.run(Actor::Table, Command::Pass),
        Err(RuleError::Contract(ContractError::SeatOnly {
            command: "pass"
        }))
    );
    assert_eq!(
        t.run(
            Actor::Seat(turn),
            Command::StartMatch {
                options: TarotOptions::default(),
                first_dealer: seat(0)
            }
        ),
        Err(RuleError::Contract(ContractError::TableOnly {
            command: "start_match"
        }))
    );
    assert_eq!(
        t.run(
            Actor::Table,
            Command::StartMatch {
                options: TarotOptions::default(),
                first_dealer: seat(0)
            }
        ),
        Err(RuleError::Contract(ContractError::MatchAlreadyStarted))
    );
    let mut fresh = Table {
        game: Tarot::new(),
        events: Vec::new(),
    };
    assert!(matches!(
        fresh.run(
            Actor::Table,
            Command::StartMatch {
                options: TarotOptions {
                    seats: 6,
                    rounds: 1
                },
                first_dealer: seat(0)
            }
        ),
        Err(RuleError::InvalidOptions(_))
    ));
}

#[test]
fn a_deal_comes_apart_and_back_through_the_contract() {
    use fairdeal_fairness::Deck;
    use fairdeal_fairness::deal::Deal;
    for (seats, deck) in [(3, Deck::Tarot3), (4, Deck::Tarot4), (5, Deck::Tarot5)] {
        let options = TarotOptions { seats, rounds: 1 };
        let layout = <Tarot as TableGame>::layout(&options).unwrap();
        assert_eq!((layout.seats, layout.deck), (usize::from(seats), deck));
        let mut game = Tarot::new();
        let start = <Tarot as TableGame>::start(&options, seat(1));
        for e in TableGame::decide(&game, Actor::Table, &start).unwrap() {
            game.apply(&e);
        }
        let deal = Deal::from_seeds(deck, "server", "client", "0");
        let command = <Tarot as TableGame>::start_hand(&deal).unwrap();
        let events = TableGame::decide(&game, Actor::Table, &command).unwrap();
        let parts = <Tarot as TableGame>::dealt(&events[0]).unwrap();
        assert_eq!(parts.dealer, seat(1));
        let talon: Vec<&str> = parts.talon.iter().map(|c| c.code()).collect();
        assert_eq!(talon, deal.codes(&deal.chien));
        assert_eq!(<Tarot as TableGame>::deal_event(parts), events[0]);
    }
}
