//! Domain events <-> protobuf events (`proto/fairdeal/tables/v1/events.proto`), and the
//! [`Aggregate`] that stores a table in stream `table-<uuid>`.
//!
//! Each [`TableEvent`] is stored as its own protobuf message, typed by its full name and
//! correlated to the table. Decoding re-validates everything (seats, cards, suits, bids,
//! UUIDs), so a foreign or corrupt event stops the fold instead of entering the state.

use fairdeal_eventstore::{NewEvent, RecordedEvent, is_event_type};
use fairdeal_fairness::Deck;
use fairdeal_games::{
    Bid, Card, Event, HandScore, MatchEnd, Purchase, Seat, Suit, TableOptions, Team,
};
use fairdeal_platform::Aggregate;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use prost::Message;
use uuid::Uuid;

use crate::domain::{CommandRef, Created, FinishReason, Finished, Table, TableEvent};

impl Aggregate for Table {
    const CATEGORY: &'static str = "table";
    type Id = Uuid;
    type Event = TableEvent;

    fn encode(id: &Uuid, event: &TableEvent) -> NewEvent {
        let table_id = id.to_string();
        let new = match to_message(&table_id, event) {
            TableMessage::Created(m) => NewEvent::from_message(&m),
            TableMessage::SeatTaken(m) => NewEvent::from_message(&m),
            TableMessage::SeatLeft(m) => NewEvent::from_message(&m),
            TableMessage::SeedContributed(m) => NewEvent::from_message(&m),
            TableMessage::MatchStarted(m) => NewEvent::from_message(&m),
            TableMessage::HandStarted(m) => NewEvent::from_message(&m),
            TableMessage::CardsDealt(m) => NewEvent::from_message(&m),
            TableMessage::BidPlaced(m) => NewEvent::from_message(&m),
            TableMessage::PlayerPassed(m) => NewEvent::from_message(&m),
            TableMessage::AuctionWon(m) => NewEvent::from_message(&m),
            TableMessage::TrumpNamed(m) => NewEvent::from_message(&m),
            TableMessage::CardPlayed(m) => NewEvent::from_message(&m),
            TableMessage::TrickWon(m) => NewEvent::from_message(&m),
            TableMessage::HandScored(m) => NewEvent::from_message(&m),
            TableMessage::MatchWon(m) => NewEvent::from_message(&m),
            TableMessage::GameFinished(m) => NewEvent::from_message(&m),
            TableMessage::SeedRevealed(m) => NewEvent::from_message(&m),
            TableMessage::TurnClock(m) => NewEvent::from_message(&m),
            TableMessage::TurnTimedOut(m) => NewEvent::from_message(&m),
            TableMessage::SeatAbandoned(m) => NewEvent::from_message(&m),
            TableMessage::SpectatorJoined(m) => NewEvent::from_message(&m),
            TableMessage::SpectatorLeft(m) => NewEvent::from_message(&m),
        };
        new.with_correlation_id(table_id)
    }

    fn decode(event: &RecordedEvent) -> Result<TableEvent, String> {
        from_recorded(event)
    }

    fn apply(state: Option<Self>, event: &TableEvent) -> Result<Self, String> {
        Table::apply(state, event)
    }
}

/// One table event as its protobuf message.
#[derive(Debug, Clone, PartialEq)]
pub enum TableMessage {
    /// `TableCreated`.
    Created(pb::TableCreated),
    /// `SeatTaken`.
    SeatTaken(pb::SeatTaken),
    /// `SeatLeft`.
    SeatLeft(pb::SeatLeft),
    /// `SeedContributed`.
    SeedContributed(pb::SeedContributed),
    /// `MatchStarted`.
    MatchStarted(pb::MatchStarted),
    /// `HandStarted`.
    HandStarted(pb::HandStarted),
    /// `CardsDealt`.
    CardsDealt(pb::CardsDealt),
    /// `BidPlaced`.
    BidPlaced(pb::BidPlaced),
    /// `PlayerPassed`.
    PlayerPassed(pb::PlayerPassed),
    /// `AuctionWon`.
    AuctionWon(pb::AuctionWon),
    /// `TrumpNamed`.
    TrumpNamed(pb::TrumpNamed),
    /// `CardPlayed`.
    CardPlayed(pb::CardPlayed),
    /// `TrickWon`.
    TrickWon(pb::TrickWon),
    /// `HandScored`.
    HandScored(pb::HandScored),
    /// `MatchWon`.
    MatchWon(pb::MatchWon),
    /// `GameFinished`.
    GameFinished(pb::GameFinished),
    /// `TableSeedRevealed`.
    SeedRevealed(pb::TableSeedRevealed),
    /// `TurnClock`.
    TurnClock(pb::TurnClock),
    /// `TurnTimedOut`.
    TurnTimedOut(pb::TurnTimedOut),
    /// `SeatAbandoned`.
    SeatAbandoned(pb::SeatAbandoned),
    /// `SpectatorJoined`.
    SpectatorJoined(pb::SpectatorJoined),
    /// `SpectatorLeft`.
    SpectatorLeft(pb::SpectatorLeft),
}

impl TableMessage {
    /// The message as the `TableEvent` of the wire.
    pub fn into_wire(self) -> pb::TableEvent {
        use pb::table_event::Event as W;
        let event = match self {
            TableMessage::Created(m) => W::TableCreated(m),
            TableMessage::SeatTaken(m) => W::SeatTaken(m),
            TableMessage::SeatLeft(m) => W::SeatLeft(m),
            TableMessage::SeedContributed(m) => W::SeedContributed(m),
            TableMessage::MatchStarted(m) => W::MatchStarted(m),
            TableMessage::HandStarted(m) => W::HandStarted(m),
            TableMessage::CardsDealt(m) => W::CardsDealt(m),
            TableMessage::BidPlaced(m) => W::BidPlaced(m),
            TableMessage::PlayerPassed(m) => W::PlayerPassed(m),
            TableMessage::AuctionWon(m) => W::AuctionWon(m),
            TableMessage::TrumpNamed(m) => W::TrumpNamed(m),
            TableMessage::CardPlayed(m) => W::CardPlayed(m),
            TableMessage::TrickWon(m) => W::TrickWon(m),
            TableMessage::HandScored(m) => W::HandScored(m),
            TableMessage::MatchWon(m) => W::MatchWon(m),
            TableMessage::GameFinished(m) => W::GameFinished(m),
            TableMessage::SeedRevealed(m) => W::TableSeedRevealed(m),
            TableMessage::TurnClock(m) => W::TurnClock(m),
            TableMessage::TurnTimedOut(m) => W::TurnTimedOut(m),
            TableMessage::SeatAbandoned(m) => W::SeatAbandoned(m),
            TableMessage::SpectatorJoined(m) => W::SpectatorJoined(m),
            TableMessage::SpectatorLeft(m) => W::SpectatorLeft(m),
        };
        pb::TableEvent { event: Some(event) }
    }
}

/// A placeholder: an event the viewer may not see, shown by its version only.
pub fn placeholder() -> pb::TableEvent {
    pb::TableEvent {
        event: Some(pb::table_event::Event::Placeholder(pb::Placeholder {})),
    }
}

fn seat_u32(seat: Seat) -> u32 {
    u32::from(seat.number())
}

fn team_u32(team: Team) -> u32 {
    team.index() as u32
}

fn command_ref(command: &Option<CommandRef>) -> Option<pb::CommandRef> {
    command.as_ref().map(|c| pb::CommandRef {
        command_id: c.command_id.clone(),
        version_after: c.version_after,
        next_turn: c.next_turn.map(|(seat, deadline_ms)| pb::Turn {
            seat: seat_u32(seat),
            deadline_ms,
        }),
    })
}

/// The protobuf form of options.
pub fn options_message(options: &TableOptions) -> pb::TableOptions {
    pb::TableOptions {
        deck: match options.deck {
            Deck::Ruff => pb::Deck::Ruff,
            _ => pb::Deck::Dix,
        } as i32,
        penalised_aces: options.penalised_aces,
        made_or_nothing: options.made_or_nothing,
        purchase: match options.purchase {
            None => pb::Purchase::Unspecified,
            Some(Purchase::Points) => pb::Purchase::Points,
            Some(Purchase::Budget) => pb::Purchase::Budget,
        } as i32,
        budget: options.budget,
    }
}

/// Options from the wire (absent: the defaults); the error names the field.
pub fn options_of(message: Option<&pb::TableOptions>) -> Result<TableOptions, String> {
    let Some(m) = message else {
        return Ok(TableOptions::default());
    };
    let deck = match pb::Deck::try_from(m.deck) {
        Ok(pb::Deck::Unspecified | pb::Deck::Dix) => Deck::Dix,
        Ok(pb::Deck::Ruff) => Deck::Ruff,
        Err(_) => return Err(format!("options.deck: unknown value {}", m.deck)),
    };
    let purchase = match pb::Purchase::try_from(m.purchase) {
        Ok(pb::Purchase::Unspecified) => None,
        Ok(pb::Purchase::Points) => Some(Purchase::Points),
        Ok(pb::Purchase::Budget) => Some(Purchase::Budget),
        Err(_) => return Err(format!("options.purchase: unknown value {}", m.purchase)),
    };
    Ok(TableOptions {
        deck,
        penalised_aces: m.penalised_aces,
        made_or_nothing: m.made_or_nothing,
        purchase,
        budget: m.budget,
    })
}

/// The protobuf form of a bid.
pub fn bid_message(bid: Bid) -> pb::Bid {
    pb::Bid {
        kind: Some(match bid {
            Bid::Points(n) => pb::bid::Kind::Points(u32::from(n)),
            Bid::Game => pb::bid::Kind::Game(true),
        }),
    }
}

/// A bid from the wire; the error says what is wrong.
pub fn bid_of(message: Option<&pb::Bid>) -> Result<Bid, String> {
    match message.and_then(|b| b.kind.as_ref()) {
        Some(pb::bid::Kind::Points(n)) => u16::try_from(*n)
            .map(Bid::Points)
            .map_err(|_| format!("{n} points is out of range")),
        Some(pb::bid::Kind::Game(true)) => Ok(Bid::Game),
        Some(pb::bid::Kind::Game(false)) => Err("game must be true when set".into()),
        None => Err("a bid needs points or game".into()),
    }
}

/// The protobuf form of a suit.
pub fn suit_message(suit: Suit) -> pb::Suit {
    match suit {
        Suit::Spades => pb::Suit::Spades,
        Suit::Hearts => pb::Suit::Hearts,
        Suit::Diamonds => pb::Suit::Diamonds,
        Suit::Clubs => pb::Suit::Clubs,
    }
}

/// A suit from the wire.
pub fn suit_of(value: i32) -> Result<Suit, String> {
    match pb::Suit::try_from(value) {
        Ok(pb::Suit::Spades) => Ok(Suit::Spades),
        Ok(pb::Suit::Hearts) => Ok(Suit::Hearts),
        Ok(pb::Suit::Diamonds) => Ok(Suit::Diamonds),
        Ok(pb::Suit::Clubs) => Ok(Suit::Clubs),
        _ => Err(format!("{value} is not a suit (1..=4)")),
    }
}

/// Card codes.
pub fn card_codes(cards: &[Card]) -> Vec<String> {
    cards.iter().map(ToString::to_string).collect()
}

/// The protobuf form of a hand's scoring.
pub fn hand_score_message(table_id: &str, s: &HandScore) -> pb::HandScored {
    pb::HandScored {
        table_id: table_id.to_owned(),
        hand: s.hand,
        declarer: seat_u32(s.declarer),
        bid: Some(bid_message(s.bid)),
        card_points: s.card_points.to_vec(),
        ace_transfers: s.ace_transfers.to_vec(),
        contract_made: s.contract_made,
        deltas: s.deltas.to_vec(),
        scores: s.scores.to_vec(),
    }
}

fn match_end_message(end: MatchEnd) -> pb::MatchEnd {
    match end {
        MatchEnd::TargetReached => pb::MatchEnd::TargetReached,
        MatchEnd::BothReachedDeclarerWins => pb::MatchEnd::BothReachedDeclarerWins,
        MatchEnd::GameBidMade => pb::MatchEnd::GameBidMade,
        MatchEnd::GameBidFailed => pb::MatchEnd::GameBidFailed,
    }
}

/// `event` of table `table_id` as its protobuf message.
pub fn to_message(table_id: &str, event: &TableEvent) -> TableMessage {
    let id = || table_id.to_owned();
    match event {
        TableEvent::Created(c) => TableMessage::Created(pb::TableCreated {
            table_id: id(),
            creator_id: c.creator.to_string(),
            options: Some(options_message(&c.options)),
            bot_seats: Seat::ALL
                .into_iter()
                .filter(|s| c.bots[s.index()])
                .map(seat_u32)
                .collect(),
            move_seconds: c.move_seconds,
            commitment: c.commitment.clone(),
            short_code: c.short_code.clone(),
            first_dealer: seat_u32(c.first_dealer),
        }),
        TableEvent::SeatTaken { seat, player } => TableMessage::SeatTaken(pb::SeatTaken {
            table_id: id(),
            seat: seat_u32(*seat),
            player_id: player.to_string(),
        }),
        TableEvent::SeatLeft { seat, player } => TableMessage::SeatLeft(pb::SeatLeft {
            table_id: id(),
            seat: seat_u32(*seat),
            player_id: player.to_string(),
        }),
        TableEvent::SeedContributed {
            seat,
            player,
            contribution,
        } => TableMessage::SeedContributed(pb::SeedContributed {
            table_id: id(),
            seat: seat_u32(*seat),
            player_id: player.to_string(),
            contribution: contribution.clone(),
        }),
        TableEvent::HandStarted {
            hand,
            dealer,
            commitment,
            client_seed,
        } => TableMessage::HandStarted(pb::HandStarted {
            table_id: id(),
            hand: *hand,
            dealer: seat_u32(*dealer),
            salt: hand.to_string(),
            commitment: commitment.clone(),
            client_seed: client_seed.clone(),
        }),
        TableEvent::CardsDealt {
            hand,
            seat,
            position,
            cards,
        } => TableMessage::CardsDealt(pb::CardsDealt {
            table_id: id(),
            hand: *hand,
            seat: seat_u32(*seat),
            position: u32::from(*position),
            cards: card_codes(cards),
        }),
        TableEvent::GameFinished(f) => TableMessage::GameFinished(pb::GameFinished {
            table_id: id(),
            players: Seat::ALL
                .into_iter()
                .map(|s| pb::SeatPlayer {
                    seat: seat_u32(s),
                    player_id: f.players[s.index()]
                        .map(|p| p.to_string())
                        .unwrap_or_default(),
                    bot: f.players[s.index()].is_none(),
                    abandoned: f.abandoned[s.index()],
                })
                .collect(),
            teams: Team::ALL
                .into_iter()
                .map(|t| pb::TeamSeats {
                    team: team_u32(t),
                    seats: t.seats().into_iter().map(seat_u32).collect(),
                })
                .collect(),
            final_scores: f.scores.to_vec(),
            winner: team_u32(f.winner),
            variant: Some(options_message(&f.options)),
            hands_played: f.hands_played,
            reason: match f.reason {
                FinishReason::Completed => pb::FinishReason::Completed,
                FinishReason::Abandoned => pb::FinishReason::Abandoned,
            } as i32,
        }),
        TableEvent::SeedRevealed {
            commitment,
            server_seed,
            client_seed,
        } => TableMessage::SeedRevealed(pb::TableSeedRevealed {
            table_id: id(),
            commitment: commitment.clone(),
            server_seed: server_seed.clone(),
            client_seed: client_seed.clone(),
        }),
        TableEvent::TurnClock { seat, deadline_ms } => TableMessage::TurnClock(pb::TurnClock {
            table_id: id(),
            seat: seat_u32(*seat),
            deadline_ms: *deadline_ms,
        }),
        TableEvent::TurnTimedOut { seat, consecutive } => {
            TableMessage::TurnTimedOut(pb::TurnTimedOut {
                table_id: id(),
                seat: seat_u32(*seat),
                consecutive: *consecutive,
            })
        }
        TableEvent::SeatAbandoned { seat, player } => {
            TableMessage::SeatAbandoned(pb::SeatAbandoned {
                table_id: id(),
                seat: seat_u32(*seat),
                player_id: player.to_string(),
            })
        }
        TableEvent::SpectatorJoined { user } => {
            TableMessage::SpectatorJoined(pb::SpectatorJoined {
                table_id: id(),
                user_id: user.to_string(),
            })
        }
        TableEvent::SpectatorLeft { user } => TableMessage::SpectatorLeft(pb::SpectatorLeft {
            table_id: id(),
            user_id: user.to_string(),
        }),
        TableEvent::Engine { event, command } => engine_message(table_id, event, command),
    }
}

fn engine_message(table_id: &str, event: &Event, command: &Option<CommandRef>) -> TableMessage {
    let id = || table_id.to_owned();
    match event {
        Event::MatchStarted {
            options,
            first_dealer,
        } => TableMessage::MatchStarted(pb::MatchStarted {
            table_id: id(),
            options: Some(options_message(options)),
            first_dealer: seat_u32(*first_dealer),
        }),
        // Never stored as such (split into HandStarted + CardsDealt by the domain); kept
        // total by recording its public part.
        Event::HandStarted { hand, dealer, .. } => TableMessage::HandStarted(pb::HandStarted {
            table_id: id(),
            hand: *hand,
            dealer: seat_u32(*dealer),
            salt: hand.to_string(),
            commitment: String::new(),
            client_seed: String::new(),
        }),
        Event::BidPlaced { seat, bid } => TableMessage::BidPlaced(pb::BidPlaced {
            table_id: id(),
            seat: seat_u32(*seat),
            bid: Some(bid_message(*bid)),
            command: command_ref(command),
        }),
        Event::PlayerPassed { seat } => TableMessage::PlayerPassed(pb::PlayerPassed {
            table_id: id(),
            seat: seat_u32(*seat),
            command: command_ref(command),
        }),
        Event::AuctionWon { seat, bid } => TableMessage::AuctionWon(pb::AuctionWon {
            table_id: id(),
            seat: seat_u32(*seat),
            bid: Some(bid_message(*bid)),
        }),
        Event::TrumpNamed { seat, suit } => TableMessage::TrumpNamed(pb::TrumpNamed {
            table_id: id(),
            seat: seat_u32(*seat),
            suit: suit_message(*suit) as i32,
            command: command_ref(command),
        }),
        Event::CardPlayed { seat, card } => TableMessage::CardPlayed(pb::CardPlayed {
            table_id: id(),
            seat: seat_u32(*seat),
            card: card.to_string(),
            command: command_ref(command),
        }),
        Event::TrickWon {
            seat,
            trick,
            points,
        } => TableMessage::TrickWon(pb::TrickWon {
            table_id: id(),
            seat: seat_u32(*seat),
            trick: u32::from(*trick),
            points: u32::from(*points),
        }),
        Event::HandScored(score) => TableMessage::HandScored(hand_score_message(table_id, score)),
        Event::MatchWon {
            team,
            reason,
            scores,
        } => TableMessage::MatchWon(pb::MatchWon {
            table_id: id(),
            team: team_u32(*team),
            reason: match_end_message(*reason) as i32,
            scores: scores.to_vec(),
        }),
    }
}

fn seat_of(n: u32) -> Result<Seat, String> {
    u8::try_from(n)
        .ok()
        .and_then(Seat::new)
        .ok_or_else(|| format!("seat {n} out of range"))
}

fn team_of(n: u32) -> Result<Team, String> {
    u8::try_from(n)
        .ok()
        .and_then(Team::new)
        .ok_or_else(|| format!("team {n} out of range"))
}

fn uuid_of(field: &str, s: &str) -> Result<Uuid, String> {
    Uuid::parse_str(s).map_err(|_| format!("{field} is not a UUID"))
}

fn pair<T: Copy>(field: &str, v: &[T]) -> Result<[T; 2], String> {
    <[T; 2]>::try_from(v).map_err(|_| format!("{field} needs 2 entries, has {}", v.len()))
}

fn cards_of(codes: &[String]) -> Result<Vec<Card>, String> {
    codes
        .iter()
        .map(|c| c.parse::<Card>().map_err(|e| e.to_string()))
        .collect()
}

fn command_of(c: Option<&pb::CommandRef>) -> Result<Option<CommandRef>, String> {
    c.map(|c| {
        Ok(CommandRef {
            command_id: c.command_id.clone(),
            version_after: c.version_after,
            next_turn: match &c.next_turn {
                Some(turn) => Some((seat_of(turn.seat)?, turn.deadline_ms)),
                None => None,
            },
        })
    })
    .transpose()
}

fn engine(event: Event, command: Option<CommandRef>) -> TableEvent {
    TableEvent::Engine { event, command }
}

fn decode<M: Message + Default>(event: &RecordedEvent) -> Result<M, String> {
    M::decode(event.payload.as_slice()).map_err(|e| e.to_string())
}

/// A stored event back into the domain, re-validated.
pub fn from_recorded(event: &RecordedEvent) -> Result<TableEvent, String> {
    let t = event.event_type.as_str();
    if is_event_type::<pb::TableCreated>(t) {
        let m: pb::TableCreated = decode(event)?;
        let mut bots = [false; 4];
        for &n in &m.bot_seats {
            bots[seat_of(n)?.index()] = true;
        }
        return Ok(TableEvent::Created(Created {
            table_id: uuid_of("table_id", &m.table_id)?,
            creator: uuid_of("creator_id", &m.creator_id)?,
            options: options_of(m.options.as_ref())?,
            bots,
            move_seconds: m.move_seconds,
            commitment: m.commitment,
            short_code: m.short_code,
            first_dealer: seat_of(m.first_dealer)?,
        }));
    }
    if is_event_type::<pb::SeatTaken>(t) {
        let m: pb::SeatTaken = decode(event)?;
        return Ok(TableEvent::SeatTaken {
            seat: seat_of(m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
        });
    }
    if is_event_type::<pb::SeatLeft>(t) {
        let m: pb::SeatLeft = decode(event)?;
        return Ok(TableEvent::SeatLeft {
            seat: seat_of(m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
        });
    }
    if is_event_type::<pb::SeedContributed>(t) {
        let m: pb::SeedContributed = decode(event)?;
        return Ok(TableEvent::SeedContributed {
            seat: seat_of(m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
            contribution: m.contribution,
        });
    }
    if is_event_type::<pb::MatchStarted>(t) {
        let m: pb::MatchStarted = decode(event)?;
        return Ok(engine(
            Event::MatchStarted {
                options: options_of(m.options.as_ref())?,
                first_dealer: seat_of(m.first_dealer)?,
            },
            None,
        ));
    }
    if is_event_type::<pb::HandStarted>(t) {
        let m: pb::HandStarted = decode(event)?;
        return Ok(TableEvent::HandStarted {
            hand: m.hand,
            dealer: seat_of(m.dealer)?,
            commitment: m.commitment,
            client_seed: m.client_seed,
        });
    }
    if is_event_type::<pb::CardsDealt>(t) {
        let m: pb::CardsDealt = decode(event)?;
        return Ok(TableEvent::CardsDealt {
            hand: m.hand,
            seat: seat_of(m.seat)?,
            position: u8::try_from(m.position)
                .ok()
                .filter(|p| *p < 4)
                .ok_or("position out of range")?,
            cards: cards_of(&m.cards)?,
        });
    }
    if is_event_type::<pb::BidPlaced>(t) {
        let m: pb::BidPlaced = decode(event)?;
        return Ok(engine(
            Event::BidPlaced {
                seat: seat_of(m.seat)?,
                bid: bid_of(m.bid.as_ref())?,
            },
            command_of(m.command.as_ref())?,
        ));
    }
    if is_event_type::<pb::PlayerPassed>(t) {
        let m: pb::PlayerPassed = decode(event)?;
        return Ok(engine(
            Event::PlayerPassed {
                seat: seat_of(m.seat)?,
            },
            command_of(m.command.as_ref())?,
        ));
    }
    if is_event_type::<pb::AuctionWon>(t) {
        let m: pb::AuctionWon = decode(event)?;
        let bid = match m.bid.as_ref().and_then(|b| b.kind.as_ref()) {
            // A price of 0 (trump taken for nothing) is a valid auction result.
            Some(pb::bid::Kind::Points(0)) => Bid::Points(0),
            _ => bid_of(m.bid.as_ref())?,
        };
        return Ok(engine(
            Event::AuctionWon {
                seat: seat_of(m.seat)?,
                bid,
            },
            None,
        ));
    }
    if is_event_type::<pb::TrumpNamed>(t) {
        let m: pb::TrumpNamed = decode(event)?;
        return Ok(engine(
            Event::TrumpNamed {
                seat: seat_of(m.seat)?,
                suit: suit_of(m.suit)?,
            },
            command_of(m.command.as_ref())?,
        ));
    }
    if is_event_type::<pb::CardPlayed>(t) {
        let m: pb::CardPlayed = decode(event)?;
        return Ok(engine(
            Event::CardPlayed {
                seat: seat_of(m.seat)?,
                card: m
                    .card
                    .parse()
                    .map_err(|e: fairdeal_games::card::BadCardCode| e.to_string())?,
            },
            command_of(m.command.as_ref())?,
        ));
    }
    if is_event_type::<pb::TrickWon>(t) {
        let m: pb::TrickWon = decode(event)?;
        return Ok(engine(
            Event::TrickWon {
                seat: seat_of(m.seat)?,
                trick: u8::try_from(m.trick).map_err(|_| "trick out of range")?,
                points: u8::try_from(m.points).map_err(|_| "points out of range")?,
            },
            None,
        ));
    }
    if is_event_type::<pb::HandScored>(t) {
        let m: pb::HandScored = decode(event)?;
        return Ok(engine(
            Event::HandScored(HandScore {
                hand: m.hand,
                declarer: seat_of(m.declarer)?,
                bid: match m.bid.as_ref().and_then(|b| b.kind.as_ref()) {
                    Some(pb::bid::Kind::Points(0)) => Bid::Points(0),
                    _ => bid_of(m.bid.as_ref())?,
                },
                card_points: pair("card_points", &m.card_points)?,
                ace_transfers: pair("ace_transfers", &m.ace_transfers)?,
                contract_made: m.contract_made,
                deltas: pair("deltas", &m.deltas)?,
                scores: pair("scores", &m.scores)?,
            }),
            None,
        ));
    }
    if is_event_type::<pb::MatchWon>(t) {
        let m: pb::MatchWon = decode(event)?;
        let reason = match pb::MatchEnd::try_from(m.reason) {
            Ok(pb::MatchEnd::TargetReached) => MatchEnd::TargetReached,
            Ok(pb::MatchEnd::BothReachedDeclarerWins) => MatchEnd::BothReachedDeclarerWins,
            Ok(pb::MatchEnd::GameBidMade) => MatchEnd::GameBidMade,
            Ok(pb::MatchEnd::GameBidFailed) => MatchEnd::GameBidFailed,
            _ => return Err(format!("match end {} unknown", m.reason)),
        };
        return Ok(engine(
            Event::MatchWon {
                team: team_of(m.team)?,
                reason,
                scores: pair("scores", &m.scores)?,
            },
            None,
        ));
    }
    if is_event_type::<pb::GameFinished>(t) {
        let m: pb::GameFinished = decode(event)?;
        let mut players = [None; 4];
        let mut abandoned = [false; 4];
        for p in &m.players {
            let seat = seat_of(p.seat)?;
            if !p.bot {
                players[seat.index()] = Some(uuid_of("player_id", &p.player_id)?);
            }
            abandoned[seat.index()] = p.abandoned;
        }
        return Ok(TableEvent::GameFinished(Finished {
            players,
            abandoned,
            scores: pair("final_scores", &m.final_scores)?,
            winner: team_of(m.winner)?,
            options: options_of(m.variant.as_ref())?,
            hands_played: m.hands_played,
            reason: match pb::FinishReason::try_from(m.reason) {
                Ok(pb::FinishReason::Completed) => FinishReason::Completed,
                Ok(pb::FinishReason::Abandoned) => FinishReason::Abandoned,
                _ => return Err(format!("finish reason {} unknown", m.reason)),
            },
        }));
    }
    if is_event_type::<pb::TableSeedRevealed>(t) {
        let m: pb::TableSeedRevealed = decode(event)?;
        return Ok(TableEvent::SeedRevealed {
            commitment: m.commitment,
            server_seed: m.server_seed,
            client_seed: m.client_seed,
        });
    }
    if is_event_type::<pb::TurnClock>(t) {
        let m: pb::TurnClock = decode(event)?;
        return Ok(TableEvent::TurnClock {
            seat: seat_of(m.seat)?,
            deadline_ms: m.deadline_ms,
        });
    }
    if is_event_type::<pb::TurnTimedOut>(t) {
        let m: pb::TurnTimedOut = decode(event)?;
        return Ok(TableEvent::TurnTimedOut {
            seat: seat_of(m.seat)?,
            consecutive: m.consecutive,
        });
    }
    if is_event_type::<pb::SeatAbandoned>(t) {
        let m: pb::SeatAbandoned = decode(event)?;
        return Ok(TableEvent::SeatAbandoned {
            seat: seat_of(m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
        });
    }
    if is_event_type::<pb::SpectatorJoined>(t) {
        let m: pb::SpectatorJoined = decode(event)?;
        return Ok(TableEvent::SpectatorJoined {
            user: uuid_of("user_id", &m.user_id)?,
        });
    }
    if is_event_type::<pb::SpectatorLeft>(t) {
        let m: pb::SpectatorLeft = decode(event)?;
        return Ok(TableEvent::SpectatorLeft {
            user: uuid_of("user_id", &m.user_id)?,
        });
    }
    Err(format!("{t} is not a table event"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use fairdeal_eventstore::StreamId;

    /// Every kind of event survives encode -> decode unchanged.
    #[test]
    fn events_round_trip() {
        let id = Uuid::now_v7();
        let s = |n| Seat::new(n).unwrap();
        let events = [
            TableEvent::Created(Created {
                table_id: id,
                creator: Uuid::now_v7(),
                options: TableOptions {
                    deck: Deck::Ruff,
                    purchase: Some(Purchase::Budget),
                    budget: Some(10),
                    ..TableOptions::default()
                },
                bots: [false, true, false, true],
                move_seconds: 30,
                commitment: "ab".repeat(32),
                short_code: "ababa".into(),
                first_dealer: s(0),
            }),
            TableEvent::SeatTaken {
                seat: s(2),
                player: Uuid::now_v7(),
            },
            TableEvent::CardsDealt {
                hand: 3,
                seat: s(1),
                position: 0,
                cards: vec!["TH".parse().unwrap(), "5C".parse().unwrap()],
            },
            engine(
                Event::CardPlayed {
                    seat: s(1),
                    card: "AS".parse().unwrap(),
                },
                Some(CommandRef {
                    command_id: "c-1".into(),
                    version_after: 40,
                    next_turn: Some((s(2), 1_700_000_030_000)),
                }),
            ),
            engine(
                Event::AuctionWon {
                    seat: s(3),
                    bid: Bid::Points(0),
                },
                None,
            ),
            engine(
                Event::BidPlaced {
                    seat: s(3),
                    bid: Bid::Game,
                },
                None,
            ),
            engine(
                Event::MatchWon {
                    team: Team::new(1).unwrap(),
                    reason: MatchEnd::GameBidMade,
                    scores: [10, -20],
                },
                None,
            ),
            TableEvent::TurnClock {
                seat: s(2),
                deadline_ms: 1_764_000_000_000,
            },
            TableEvent::TurnTimedOut {
                seat: s(2),
                consecutive: 3,
            },
            TableEvent::SeatAbandoned {
                seat: s(2),
                player: Uuid::now_v7(),
            },
            TableEvent::SpectatorJoined {
                user: Uuid::now_v7(),
            },
            TableEvent::SpectatorLeft {
                user: Uuid::now_v7(),
            },
            TableEvent::GameFinished(Finished {
                players: [Some(Uuid::now_v7()), None, Some(Uuid::now_v7()), None],
                abandoned: [false, false, true, false],
                scores: [510, 230],
                winner: Team::new(0).unwrap(),
                options: TableOptions::default(),
                hands_played: 7,
                reason: FinishReason::Completed,
            }),
        ];
        for (i, event) in events.iter().enumerate() {
            let new = <Table as Aggregate>::encode(&id, event);
            let recorded = stored(id, i as u64 + 1, &new);
            assert_eq!(&from_recorded(&recorded).unwrap(), event);
            assert_eq!(new.correlation_id, id.to_string());
        }
    }

    /// `new` as table `id`'s stream would hold it at `version` (unhashed: decoding does not
    /// look at the chain).
    fn stored(id: Uuid, version: u64, new: &NewEvent) -> RecordedEvent {
        RecordedEvent {
            position: version,
            event_id: new.event_id,
            stream_id: StreamId::of("table", id).unwrap(),
            version,
            event_type: new.event_type.clone(),
            occurred_at: new.occurred_at,
            correlation_id: new.correlation_id.clone(),
            causation_id: new.causation_id.clone(),
            trace_context: new.trace_context.clone(),
            payload: new.payload.clone(),
            prev_hash: Default::default(),
            hash: Default::default(),
        }
    }

    #[test]
    fn a_command_whose_next_turn_names_no_seat_is_refused() {
        let id = Uuid::now_v7();
        let message = pb::CardPlayed {
            table_id: id.to_string(),
            seat: 1,
            card: "AS".into(),
            command: Some(pb::CommandRef {
                command_id: "c-1".into(),
                version_after: 9,
                next_turn: Some(pb::Turn {
                    seat: 4,
                    deadline_ms: 1,
                }),
            }),
        };
        let new = NewEvent::from_message(&message).with_correlation_id(id.to_string());
        let recorded = stored(id, 1, &new);
        assert_eq!(from_recorded(&recorded).unwrap_err(), "seat 4 out of range");
    }
}
