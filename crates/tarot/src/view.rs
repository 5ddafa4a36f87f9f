//! What each participant may see.
//!
//! [`PublicView`] is what a spectator sees: scores, the auction, the contract and the
//! called card, the chien once it is shown (petite and garde only), the trumps discarded
//! to the écart (shown, as the rules require), the poignées, every card played, how many
//! cards each seat holds, but no hand. [`SeatView`] adds the seat's own hand, its own
//! écart when it is the taker, and the commands it may send now. A card another seat
//! holds appears in neither unless the rules showed it (the taken chien, a poignée); the
//! chien of a garde sans or contre and the écart's other cards are never shown to
//! anybody but, for the écart, the taker.

use fairdeal_table_game::Seat;
use serde::{Deserialize, Serialize};

use crate::card::{Card, CardSet, TarotCards};
use crate::command::Command;
use crate::contract::Contract;
use crate::error::Phase;
use crate::event::{AuctionCall, DealScore, ShownPoignee};
use crate::game::Tarot;
use crate::options::TarotOptions;
use crate::trick::{PlayedCard, Trick};

/// The table as a spectator sees it: everything public, no hand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicView {
    /// Events applied so far (the state's version).
    pub version: u64,
    /// Where the match stands.
    pub phase: Phase,
    /// The table's options, once the match has started.
    pub options: Option<TarotOptions>,
    /// Each seat's cumulative score.
    pub scores: Vec<i32>,
    /// Number of the current (or last) deal.
    pub deal: Option<u32>,
    /// Its dealer.
    pub dealer: Option<Seat>,
    /// Who must act now (`None`: the table must deal, or the match is over).
    pub turn: Option<Seat>,
    /// Cards each seat holds, by seat.
    pub card_counts: Vec<usize>,
    /// The auction so far.
    pub auction: Vec<AuctionCall>,
    /// The highest bid so far.
    pub highest_bid: Option<AuctionCall>,
    /// The taker, once the auction is won.
    pub taker: Option<Seat>,
    /// The contract, once the auction is won.
    pub contract: Option<Contract>,
    /// The card called at 5.
    pub called: Option<Card>,
    /// Who played the called card, once it is played: the partner (or the taker, alone).
    pub called_played_by: Option<Seat>,
    /// The chien, once shown (petite and garde); empty otherwise.
    pub chien: Vec<Card>,
    /// Cards in the écart so far.
    pub ecart_len: usize,
    /// The trumps put in the écart (shown to all).
    pub ecart_trumps: Vec<Card>,
    /// Whether the taker announced a chelem, once it has said.
    pub chelem_announced: Option<bool>,
    /// The poignées shown.
    pub poignees: Vec<ShownPoignee>,
    /// The trick being played.
    pub trick: Vec<PlayedCard>,
    /// The finished tricks of the deal.
    pub tricks: Vec<Trick>,
    /// Scoring of the last scored deal.
    pub last_score: Option<DealScore>,
}

/// The table as one seat sees it: the public view, its own cards, and what it may do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatView {
    /// The viewer.
    pub seat: Seat,
    /// The viewer's cards, in canonical order.
    pub hand: Vec<Card>,
    /// The viewer's écart, when it is the taker (empty otherwise).
    pub ecart: Vec<Card>,
    /// The commands the viewer may send now (empty when it is not its turn).
    pub legal: Vec<Command>,
    /// Everything public.
    pub table: PublicView,
}

impl SeatView {
    /// The viewer's cards as a set.
    pub fn hand_set(&self) -> CardSet {
        self.hand.iter().copied().collect()
    }
}

impl PublicView {
    /// Every card played in the deal so far (finished tricks and the current one).
    pub fn played(&self) -> CardSet {
        self.tricks
            .iter()
            .flat_map(|t| t.cards.iter())
            .chain(self.trick.iter())
            .map(|p| p.card)
            .collect()
    }
}

impl Tarot {
    /// What a spectator sees.
    pub fn public_view(&self) -> PublicView {
        let deal = self.deal_state();
        PublicView {
            version: self.version(),
            phase: self.phase(),
            options: self.options(),
            scores: self.scores().to_vec(),
            deal: deal.map(|d| d.number),
            dealer: deal.map(|d| d.dealer),
            turn: self.turn(),
            card_counts: deal.map_or_else(Vec::new, |d| d.hands.iter().map(|h| h.len()).collect()),
            auction: deal.map_or_else(Vec::new, |d| d.calls.clone()),
            highest_bid: deal
                .and_then(|d| d.highest)
                .map(|(seat, contract)| AuctionCall {
                    seat,
                    bid: Some(contract),
                }),
            taker: deal.and_then(|d| d.taker()),
            contract: deal.and_then(|d| d.contract).map(|(_, c)| c),
            called: deal.and_then(|d| d.called),
            called_played_by: deal.and_then(|d| d.called_played_by()),
            chien: deal
                .filter(|d| d.chien_shown)
                .map_or_else(Vec::new, |d| d.chien.to_vec()),
            ecart_len: deal.map_or(0, |d| d.ecart.len()),
            ecart_trumps: deal.map_or_else(Vec::new, |d| d.ecart.trumps().to_vec()),
            chelem_announced: deal.and_then(|d| d.chelem_announced),
            poignees: deal.map_or_else(Vec::new, |d| d.poignees.clone()),
            trick: deal.map_or_else(Vec::new, |d| d.trick.clone()),
            tricks: deal.map_or_else(Vec::new, |d| d.tricks.clone()),
            last_score: self.last_score().cloned(),
        }
    }

    /// What `seat` sees: the public view, its own cards (and écart) and its legal
    /// commands.
    pub fn seat_view(&self, seat: Seat) -> SeatView {
        let table = self.public_view();
        let ecart = if table.taker == Some(seat) {
            self.ecart().to_vec()
        } else {
            Vec::new()
        };
        SeatView {
            seat,
            hand: self.hand_of(seat).to_vec(),
            ecart,
            legal: self.legal_commands(seat),
            table,
        }
    }
}
