//! Jeu du 10: the messages of `fairdeal.tables.v1` (`proto/fairdeal/tables/v1`) <-> the
//! engine's types (`fairdeal_games`).
//!
//! Each value has a writer (`*_message`, `*_number`, `*_code`, `*_name`: total) and a
//! reader (`*_of`: checked, its error naming the field it is given). Here: seats, teams,
//! cards, suits, bids, options, match ends, phases. The engine's events, hand scores and
//! command references ([`engine_message`], [`EventMessage`]) and the views and moves
//! ([`seat_game_view`], [`seat_view_of`], [`legal_action`], [`act_action`]) are mapped in
//! two private submodules and exported from here.
//!
//! Wire conventions, as the protobuf comments state them: seats are 0..3 clockwise, teams
//! 0 (seats 0 and 2) and 1; cards are codes (`"TH"`); suits are `Suit` numbers 1..=4;
//! per-team lists have team 0 first. A bid of 0 points is read like any other number: it
//! is the price of trump taken for nothing (`AuctionWon`, `HandScored`); as a bid it is
//! the engine's to refuse (docs/decisions.md, "One wire mapping per game").

use fairdeal_fairness::Deck;
use fairdeal_games::{Bid, Card, MatchEnd, Phase, Purchase, Seat, Suit, TableOptions, Team};
use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::error::{Reason, WireError};

mod events;
mod views;
mod wire_game;

#[cfg(test)]
mod tests;

pub use events::{EngineMessage, EventMessage, engine_message, hand_score_message, hand_score_of};
pub use views::{act_action, game_view, legal_action, legal_command, seat_game_view, seat_view_of};

fn out_of_range(field: &str, value: impl Into<i64>, range: &'static str) -> WireError {
    WireError::new(
        field,
        Reason::OutOfRange {
            value: value.into(),
            range,
        },
    )
}

/// A seat's number on the wire (0..3).
pub fn seat_number(seat: Seat) -> u32 {
    u32::from(seat.number())
}

/// The seat numbered `n` in `field`.
pub fn seat_of(field: &str, n: u32) -> Result<Seat, WireError> {
    u8::try_from(n)
        .ok()
        .and_then(Seat::new)
        .ok_or_else(|| out_of_range(field, n, "0..=3"))
}

/// A team's number on the wire (0 or 1).
pub fn team_number(team: Team) -> u32 {
    // 0 or 1: lossless.
    team.index() as u32
}

/// The team numbered `n` in `field`.
pub fn team_of(field: &str, n: u32) -> Result<Team, WireError> {
    u8::try_from(n)
        .ok()
        .and_then(Team::new)
        .ok_or_else(|| out_of_range(field, n, "0..=1"))
}

/// Each team's seats (`GameFinished.teams`), team 0 first.
pub fn team_seats() -> Vec<pb::TeamSeats> {
    Team::ALL
        .into_iter()
        .map(|t| pb::TeamSeats {
            team: team_number(t),
            seats: t.seats().into_iter().map(seat_number).collect(),
        })
        .collect()
}

/// A per-team list (`scores`, `deltas`, ...) of `field`: exactly two entries, team 0 first.
pub fn per_team<T: Copy>(field: &str, values: &[T]) -> Result<[T; 2], WireError> {
    fixed(field, values)
}

/// A list of `field` that must have exactly `N` entries.
fn fixed<T: Copy, const N: usize>(field: &str, values: &[T]) -> Result<[T; N], WireError> {
    <[T; N]>::try_from(values).map_err(|_| {
        WireError::new(
            field,
            Reason::Length {
                expected: N,
                actual: values.len(),
            },
        )
    })
}

/// A card's code (`"TH"`).
pub fn card_code(card: Card) -> String {
    card.to_string()
}

/// The card coded `code` in `field`.
pub fn card_of(field: &str, code: &str) -> Result<Card, WireError> {
    code.parse().map_err(|_| {
        WireError::new(
            field,
            Reason::Unrecognised {
                what: "card code",
                value: code.to_owned(),
            },
        )
    })
}

/// Cards as their codes, in order.
pub fn card_codes(cards: &[Card]) -> Vec<String> {
    cards.iter().copied().map(card_code).collect()
}

/// The cards coded `codes` in `field`, in order.
pub fn cards_of(field: &str, codes: &[String]) -> Result<Vec<Card>, WireError> {
    codes.iter().map(|code| card_of(field, code)).collect()
}

/// A suit's message.
pub fn suit_message(suit: Suit) -> pb::Suit {
    match suit {
        Suit::Spades => pb::Suit::Spades,
        Suit::Hearts => pb::Suit::Hearts,
        Suit::Diamonds => pb::Suit::Diamonds,
        Suit::Clubs => pb::Suit::Clubs,
    }
}

/// The suit numbered `value` in `field` (`SUIT_UNSPECIFIED` is no suit).
pub fn suit_of(field: &str, value: i32) -> Result<Suit, WireError> {
    match pb::Suit::try_from(value) {
        Ok(pb::Suit::Spades) => Ok(Suit::Spades),
        Ok(pb::Suit::Hearts) => Ok(Suit::Hearts),
        Ok(pb::Suit::Diamonds) => Ok(Suit::Diamonds),
        Ok(pb::Suit::Clubs) => Ok(Suit::Clubs),
        Ok(pb::Suit::Unspecified) | Err(_) => Err(out_of_range(field, value, "1..=4")),
    }
}

/// A bid's message (`game` is `true` when set).
pub fn bid_message(bid: Bid) -> pb::Bid {
    pb::Bid {
        kind: Some(match bid {
            Bid::Points(n) => pb::bid::Kind::Points(u32::from(n)),
            Bid::Game => pb::bid::Kind::Game(true),
        }),
    }
}

/// The bid in `field`. Any number of points the engine's bid can hold is read, 0 included
/// (the price of trump taken for nothing); whether it may be bid is the engine's rule.
pub fn bid_of(field: &str, message: Option<&pb::Bid>) -> Result<Bid, WireError> {
    match message.and_then(|b| b.kind.as_ref()) {
        Some(pb::bid::Kind::Points(n)) => u16::try_from(*n)
            .map(Bid::Points)
            .map_err(|_| out_of_range(&format!("{field}.points"), *n, "0..=65535")),
        Some(pb::bid::Kind::Game(true)) => Ok(Bid::Game),
        Some(pb::bid::Kind::Game(false)) => Err(WireError::new(
            format!("{field}.game"),
            Reason::Invalid("must be true when set"),
        )),
        None => Err(WireError::missing(field)),
    }
}

/// Table options' message.
pub fn options_message(options: &TableOptions) -> pb::TableOptions {
    pb::TableOptions {
        deck: match options.deck {
            Deck::Ruff => pb::Deck::Ruff,
            // The engine's rules accept no other deck than these two.
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
        tarot: None,
    }
}

/// The table options in `field`; absent, the defaults (the standard game), as
/// `DECK_UNSPECIFIED` is the `dix` deck. Options with a Tarot part (`tarot`) are refused. Whether they make sense together is the engine's
/// to say (`Rules::new`).
pub fn options_of(
    field: &str,
    message: Option<&pb::TableOptions>,
) -> Result<TableOptions, WireError> {
    let Some(m) = message else {
        return Ok(TableOptions::default());
    };
    if m.tarot.is_some() {
        return Err(WireError::new(
            format!("{field}.tarot"),
            Reason::Invalid("a French Tarot table's options, not Jeu du 10's"),
        ));
    }
    let deck = match pb::Deck::try_from(m.deck) {
        Ok(pb::Deck::Unspecified | pb::Deck::Dix) => Deck::Dix,
        Ok(pb::Deck::Ruff) => Deck::Ruff,
        Err(_) => return Err(out_of_range(&format!("{field}.deck"), m.deck, "0..=2")),
    };
    let purchase = match pb::Purchase::try_from(m.purchase) {
        Ok(pb::Purchase::Unspecified) => None,
        Ok(pb::Purchase::Points) => Some(Purchase::Points),
        Ok(pb::Purchase::Budget) => Some(Purchase::Budget),
        Err(_) => {
            return Err(out_of_range(
                &format!("{field}.purchase"),
                m.purchase,
                "0..=2",
            ));
        }
    };
    Ok(TableOptions {
        deck,
        penalised_aces: m.penalised_aces,
        made_or_nothing: m.made_or_nothing,
        purchase,
        budget: m.budget,
    })
}

/// Why a match ended, as its message.
pub fn match_end_message(end: MatchEnd) -> pb::MatchEnd {
    match end {
        MatchEnd::TargetReached => pb::MatchEnd::TargetReached,
        MatchEnd::BothReachedDeclarerWins => pb::MatchEnd::BothReachedDeclarerWins,
        MatchEnd::GameBidMade => pb::MatchEnd::GameBidMade,
        MatchEnd::GameBidFailed => pb::MatchEnd::GameBidFailed,
    }
}

/// Why the match ended, numbered `value` in `field`.
pub fn match_end_of(field: &str, value: i32) -> Result<MatchEnd, WireError> {
    match pb::MatchEnd::try_from(value) {
        Ok(pb::MatchEnd::TargetReached) => Ok(MatchEnd::TargetReached),
        Ok(pb::MatchEnd::BothReachedDeclarerWins) => Ok(MatchEnd::BothReachedDeclarerWins),
        Ok(pb::MatchEnd::GameBidMade) => Ok(MatchEnd::GameBidMade),
        Ok(pb::MatchEnd::GameBidFailed) => Ok(MatchEnd::GameBidFailed),
        Ok(pb::MatchEnd::Unspecified) | Err(_) => Err(out_of_range(field, value, "1..=4")),
    }
}

/// The engine's phase by its name in `GameView.phase`.
pub fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::NotStarted => "not_started",
        Phase::AwaitingDeal => "awaiting_deal",
        Phase::Auction => "auction",
        Phase::NamingTrump => "naming_trump",
        Phase::Playing => "playing",
        Phase::Finished => "finished",
    }
}

/// The phase named `name` in `field`.
pub fn phase_of(field: &str, name: &str) -> Result<Phase, WireError> {
    Ok(match name {
        "not_started" => Phase::NotStarted,
        "awaiting_deal" => Phase::AwaitingDeal,
        "auction" => Phase::Auction,
        "naming_trump" => Phase::NamingTrump,
        "playing" => Phase::Playing,
        "finished" => Phase::Finished,
        _ => {
            return Err(WireError::new(
                field,
                Reason::Unrecognised {
                    what: "phase",
                    value: name.to_owned(),
                },
            ));
        }
    })
}
