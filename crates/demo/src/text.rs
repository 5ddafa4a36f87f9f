//! How the demo writes seats, bids and suits. The moves themselves are chosen by
//! `fairdeal-client` (the seat's own view read as the engine's, the engine's bot choosing).

use fairdeal_proto::fairdeal::tables::v1 as pb;

/// Seat names, by seat number.
pub const SEAT_NAMES: [&str; 4] = ["north", "east", "south", "west"];

/// The seat's one-letter name.
pub fn seat_letter(seat: u32) -> &'static str {
    ["N", "E", "S", "W"]
        .get(seat as usize)
        .copied()
        .unwrap_or("?")
}

/// A bid as text: `80` or `the game`.
pub fn bid_text(b: Option<&pb::Bid>) -> String {
    match b.and_then(|b| b.kind.as_ref()) {
        Some(pb::bid::Kind::Points(n)) => n.to_string(),
        Some(pb::bid::Kind::Game(_)) => "the game".to_owned(),
        None => "?".to_owned(),
    }
}

/// A suit's name.
pub fn suit_name(value: i32) -> &'static str {
    match pb::Suit::try_from(value) {
        Ok(pb::Suit::Spades) => "spades",
        Ok(pb::Suit::Hearts) => "hearts",
        Ok(pb::Suit::Diamonds) => "diamonds",
        Ok(pb::Suit::Clubs) => "clubs",
        _ => "?",
    }
}

/// A Tarot contract's name, as the wire's enum number gives it.
pub(crate) fn tarot_contract(contract: i32) -> &'static str {
    match pb::TarotContract::try_from(contract) {
        Ok(pb::TarotContract::Petite) => "petite",
        Ok(pb::TarotContract::Garde) => "garde",
        Ok(pb::TarotContract::GardeSans) => "garde sans le chien",
        Ok(pb::TarotContract::GardeContre) => "garde contre le chien",
        _ => "?",
    }
}
