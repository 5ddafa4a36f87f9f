//! French Tarot: the messages of `fairdeal.tables.v1` (`proto/fairdeal/tables/v1/tarot.proto`
//! and `tarot_events.proto`) <-> the engine's types (`fairdeal_tarot`).
//!
//! Each value has a writer (`*_message`, `*_code`, `*_name`: total) and a reader (`*_of`:
//! checked, its error naming the field it is given). Here: cards, contracts, poignées,
//! camps, chelems, options and phases; seats are the table's ([`crate::table`]). The
//! engine's events and deal scores ([`event_message`], [`event_of`], [`score_message`],
//! [`score_of`]) and the views and moves ([`game_view`], [`seat_game_view`],
//! [`seat_view_of`], [`legal_action`], [`act_command`]) are mapped in two private
//! submodules and exported from here.
//!
//! Privacy is carried by the message types: a card put in the écart that is not a trump
//! (the engine's `Event::private_to`) is written as `TarotCardDiscarded`, which the table
//! shows to its `seat` (the taker) only, as it does a `CardsDealt`; a trump put there as
//! the public `TarotTrumpDiscarded`. Reading refuses either message holding the other's
//! kind of card, so a plain card can never be read from the public message. [`private_to`]
//! says which seat may see a message, for the table's watchers.
//!
//! Wire conventions (tarot.proto): seats are 0 up to the table's seat count, per-seat lists
//! have seat 0 first, cards are the fairness crate's codes (`"T21"`, `"EX"`, `"10H"`), and
//! the enums' zero value (UNSPECIFIED) is never a value.

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_tarot::card::DECK_HALF_POINTS;
use fairdeal_tarot::options::MAX_ROUNDS;
use fairdeal_tarot::{Camp, Card, Chelem, Contract, Phase, Poignee, TarotOptions};

use crate::error::{Reason, WireError};

mod events;
mod views;
mod wire_game;

#[cfg(test)]
mod tests;

pub use events::{event_message, event_of, private_to, score_message, score_of};
pub use views::{
    act_action, act_command, game_view, legal_action, legal_command, seat_game_view, seat_view_of,
};

fn out_of_range(field: &str, value: impl Into<i64>, range: &'static str) -> WireError {
    WireError::new(
        field,
        Reason::OutOfRange {
            value: value.into(),
            range,
        },
    )
}

/// A count on the wire (lists are far below `u32::MAX`).
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The number `n` of `field` as a `u8` (`range` names the values the field may hold).
fn small(field: &str, n: u32, range: &'static str) -> Result<u8, WireError> {
    u8::try_from(n).map_err(|_| out_of_range(field, n, range))
}

/// A card's code (`"T21"`, `"EX"`, `"10H"`).
pub fn card_code(card: Card) -> String {
    card.code().to_owned()
}

/// The card coded `code` in `field`.
pub fn card_of(field: &str, code: &str) -> Result<Card, WireError> {
    code.parse().map_err(|_| {
        WireError::new(
            field,
            Reason::Unrecognised {
                what: "Tarot card code",
                // Codes are short; keep a pasted wall of text out of the message.
                value: code.chars().take(8).collect(),
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

/// A contract's message.
pub fn contract_message(contract: Contract) -> pb::TarotContract {
    match contract {
        Contract::Petite => pb::TarotContract::Petite,
        Contract::Garde => pb::TarotContract::Garde,
        Contract::GardeSans => pb::TarotContract::GardeSans,
        Contract::GardeContre => pb::TarotContract::GardeContre,
    }
}

/// The contract numbered `value` in `field`.
pub fn contract_of(field: &str, value: i32) -> Result<Contract, WireError> {
    match pb::TarotContract::try_from(value) {
        Ok(pb::TarotContract::Petite) => Ok(Contract::Petite),
        Ok(pb::TarotContract::Garde) => Ok(Contract::Garde),
        Ok(pb::TarotContract::GardeSans) => Ok(Contract::GardeSans),
        Ok(pb::TarotContract::GardeContre) => Ok(Contract::GardeContre),
        Ok(pb::TarotContract::Unspecified) | Err(_) => Err(out_of_range(field, value, "1..=4")),
    }
}

/// A poignée's message.
pub fn poignee_message(poignee: Poignee) -> pb::TarotPoignee {
    match poignee {
        Poignee::Simple => pb::TarotPoignee::Simple,
        Poignee::Double => pb::TarotPoignee::Double,
        Poignee::Triple => pb::TarotPoignee::Triple,
    }
}

/// The poignée numbered `value` in `field`.
pub fn poignee_of(field: &str, value: i32) -> Result<Poignee, WireError> {
    match pb::TarotPoignee::try_from(value) {
        Ok(pb::TarotPoignee::Simple) => Ok(Poignee::Simple),
        Ok(pb::TarotPoignee::Double) => Ok(Poignee::Double),
        Ok(pb::TarotPoignee::Triple) => Ok(Poignee::Triple),
        Ok(pb::TarotPoignee::Unspecified) | Err(_) => Err(out_of_range(field, value, "1..=3")),
    }
}

/// A side's message.
pub fn camp_message(camp: Camp) -> pb::TarotCamp {
    match camp {
        Camp::Attack => pb::TarotCamp::Attack,
        Camp::Defence => pb::TarotCamp::Defence,
    }
}

/// The side numbered `value` in `field`.
pub fn camp_of(field: &str, value: i32) -> Result<Camp, WireError> {
    match pb::TarotCamp::try_from(value) {
        Ok(pb::TarotCamp::Attack) => Ok(Camp::Attack),
        Ok(pb::TarotCamp::Defence) => Ok(Camp::Defence),
        Ok(pb::TarotCamp::Unspecified) | Err(_) => Err(out_of_range(field, value, "1..=2")),
    }
}

/// A chelem's message.
pub fn chelem_message(chelem: Chelem) -> pb::TarotChelem {
    match chelem {
        Chelem::None => pb::TarotChelem::None,
        Chelem::AnnouncedMade => pb::TarotChelem::AnnouncedMade,
        Chelem::Made => pb::TarotChelem::Made,
        Chelem::AnnouncedFailed => pb::TarotChelem::AnnouncedFailed,
        Chelem::Defence => pb::TarotChelem::Defence,
    }
}

/// The chelem numbered `value` in `field`.
pub fn chelem_of(field: &str, value: i32) -> Result<Chelem, WireError> {
    match pb::TarotChelem::try_from(value) {
        Ok(pb::TarotChelem::None) => Ok(Chelem::None),
        Ok(pb::TarotChelem::AnnouncedMade) => Ok(Chelem::AnnouncedMade),
        Ok(pb::TarotChelem::Made) => Ok(Chelem::Made),
        Ok(pb::TarotChelem::AnnouncedFailed) => Ok(Chelem::AnnouncedFailed),
        Ok(pb::TarotChelem::Defence) => Ok(Chelem::Defence),
        Ok(pb::TarotChelem::Unspecified) | Err(_) => Err(out_of_range(field, value, "1..=5")),
    }
}

/// Tarot's options as their own message (`TableOptions.tarot`, `TarotMatchStarted`).
pub fn tarot_options_message(options: &TarotOptions) -> pb::TarotOptions {
    pb::TarotOptions {
        seats: u32::from(options.seats),
        rounds: u32::from(options.rounds),
    }
}

/// Tarot's options in `field`: 3..=5 seats, 1..=10 rounds (the engine's bounds).
pub fn tarot_options_of(
    field: &str,
    message: Option<&pb::TarotOptions>,
) -> Result<TarotOptions, WireError> {
    let m = message.ok_or_else(|| WireError::missing(field))?;
    let seats = u8::try_from(m.seats)
        .ok()
        .filter(|s| (3..=5).contains(s))
        .ok_or_else(|| out_of_range(&format!("{field}.seats"), m.seats, "3..=5"))?;
    let rounds = u8::try_from(m.rounds)
        .ok()
        .filter(|r| (1..=MAX_ROUNDS).contains(r))
        .ok_or_else(|| out_of_range(&format!("{field}.rounds"), m.rounds, "1..=10"))?;
    Ok(TarotOptions { seats, rounds })
}

/// A Tarot table's options as the table's options message: its own part set, Jeu du 10's
/// unset.
pub fn options_message(options: &TarotOptions) -> pb::TableOptions {
    pb::TableOptions {
        tarot: Some(tarot_options_message(options)),
        ..pb::TableOptions::default()
    }
}

/// A Tarot table's options in `field`: the message is required, with its `tarot` part, and
/// none of Jeu du 10's variants (a Jeu du 10 table's options are not a Tarot table's).
pub fn options_of(
    field: &str,
    message: Option<&pb::TableOptions>,
) -> Result<TarotOptions, WireError> {
    let m = message.ok_or_else(|| WireError::missing(field))?;
    let jeu_du_10 = pb::TableOptions { tarot: None, ..*m };
    if jeu_du_10 != pb::TableOptions::default() {
        return Err(WireError::new(
            field,
            Reason::Invalid("Jeu du 10's variants are set: not a Tarot table's options"),
        ));
    }
    tarot_options_of(&format!("{field}.tarot"), m.tarot.as_ref())
}

/// The engine's phase by its name in `GameView.phase`.
pub fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::NotStarted => "not_started",
        Phase::AwaitingDeal => "awaiting_deal",
        Phase::Bidding => "bidding",
        Phase::Calling => "calling",
        Phase::Discarding => "discarding",
        Phase::Announcing => "announcing",
        Phase::Playing => "playing",
        Phase::Finished => "finished",
    }
}

/// The phase named `name` in `field`.
pub fn phase_of(field: &str, name: &str) -> Result<Phase, WireError> {
    Ok(match name {
        "not_started" => Phase::NotStarted,
        "awaiting_deal" => Phase::AwaitingDeal,
        "bidding" => Phase::Bidding,
        "calling" => Phase::Calling,
        "discarding" => Phase::Discarding,
        "announcing" => Phase::Announcing,
        "playing" => Phase::Playing,
        "finished" => Phase::Finished,
        _ => {
            return Err(WireError::new(
                field,
                Reason::Unrecognised {
                    what: "Tarot phase",
                    value: name.chars().take(16).collect(),
                },
            ));
        }
    })
}

/// The attack's half-points in `field` (0..=182, the deck's).
fn half_points_of(field: &str, n: u32) -> Result<u16, WireError> {
    u16::try_from(n)
        .ok()
        .filter(|h| *h <= DECK_HALF_POINTS)
        .ok_or_else(|| out_of_range(field, n, "0..=182"))
}

/// A per-seat list of `field`: 3, 4 or 5 entries (a Tarot table's seats).
fn per_seat<T: Clone>(field: &str, values: &[T]) -> Result<Vec<T>, WireError> {
    if (3..=5).contains(&values.len()) {
        Ok(values.to_vec())
    } else {
        Err(WireError::new(
            field,
            Reason::Invalid("one entry per seat: 3, 4 or 5"),
        ))
    }
}
