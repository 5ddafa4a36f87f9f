//! [`WireGame`] for French Tarot: the mapping of this module, through the trait the tables
//! service, the auditor and the client take a game's messages by.

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::Seat;
use fairdeal_tarot::{Card, Command, Event, PublicView, SeatView, Tarot, TarotOptions};

use super::{
    act_action, act_command, card_codes, cards_of, event_message, event_of, game_view,
    options_message, options_of, private_to, seat_game_view, seat_view_of,
};
use crate::error::WireError;
use crate::game::{ReadEvent, WireEvent, WireGame, decode, stored};

impl WireGame for Tarot {
    fn options_message(options: &TarotOptions) -> pb::TableOptions {
        options_message(options)
    }

    fn options_of(
        field: &str,
        message: Option<&pb::TableOptions>,
    ) -> Result<TarotOptions, WireError> {
        options_of(field, message)
    }

    fn card_codes(cards: &[Card]) -> Vec<String> {
        card_codes(cards)
    }

    fn cards_of(field: &str, codes: &[String]) -> Result<Vec<Card>, WireError> {
        cards_of(field, codes)
    }

    fn event_message(table_id: &str, event: &Event, command: Option<pb::CommandRef>) -> WireEvent {
        event_message(table_id, event, command)
    }

    fn event_of(message: &WireEvent) -> Option<ReadEvent<Tarot>> {
        event_of(message)
    }

    fn private_to(message: &WireEvent) -> Result<Option<Seat>, WireError> {
        private_to(message)
    }

    fn stored_event(
        event_type: &str,
        payload: &[u8],
    ) -> Option<Result<WireEvent, prost::DecodeError>> {
        use WireEvent as W;
        let name = event_type.strip_prefix("fairdeal.tables.v1.")?;
        Some(match name {
            "TarotMatchStarted" => decode(payload, W::TarotMatchStarted),
            "TarotDealAnnulled" => decode(payload, W::TarotDealAnnulled),
            "TarotBidPlaced" => decode(payload, W::TarotBidPlaced),
            "TarotPlayerPassed" => decode(payload, W::TarotPlayerPassed),
            "TarotAuctionWon" => decode(payload, W::TarotAuctionWon),
            "TarotAllPassed" => decode(payload, W::TarotAllPassed),
            "TarotKingCalled" => decode(payload, W::TarotKingCalled),
            "TarotChienShown" => decode(payload, W::TarotChienShown),
            "TarotTrumpDiscarded" => decode(payload, W::TarotTrumpDiscarded),
            "TarotCardDiscarded" => decode(payload, W::TarotCardDiscarded),
            "TarotChelemDeclared" => decode(payload, W::TarotChelemDeclared),
            "TarotPoigneeShown" => decode(payload, W::TarotPoigneeShown),
            "TarotCardPlayed" => decode(payload, W::TarotCardPlayed),
            "TarotTrickWon" => decode(payload, W::TarotTrickWon),
            "TarotDealScored" => decode(payload, W::TarotDealScored),
            "TarotMatchEnded" => decode(payload, W::TarotMatchEnded),
            _ => return None,
        })
    }

    fn stored_message(message: &WireEvent) -> Option<(String, Vec<u8>)> {
        use WireEvent as W;
        Some(match message {
            W::TarotMatchStarted(m) => stored(m),
            W::TarotDealAnnulled(m) => stored(m),
            W::TarotBidPlaced(m) => stored(m),
            W::TarotPlayerPassed(m) => stored(m),
            W::TarotAuctionWon(m) => stored(m),
            W::TarotAllPassed(m) => stored(m),
            W::TarotKingCalled(m) => stored(m),
            W::TarotChienShown(m) => stored(m),
            W::TarotTrumpDiscarded(m) => stored(m),
            W::TarotCardDiscarded(m) => stored(m),
            W::TarotChelemDeclared(m) => stored(m),
            W::TarotPoigneeShown(m) => stored(m),
            W::TarotCardPlayed(m) => stored(m),
            W::TarotTrickWon(m) => stored(m),
            W::TarotDealScored(m) => stored(m),
            W::TarotMatchEnded(m) => stored(m),
            _ => return None,
        })
    }

    fn game_view(view: &PublicView) -> pb::GameView {
        game_view(view)
    }

    fn seat_game_view(view: &SeatView) -> pb::GameView {
        seat_game_view(view)
    }

    fn act_command(request: &pb::ActRequest) -> Result<Command, WireError> {
        act_command(request)
    }

    fn act_action(command: &Command) -> Option<pb::act_request::Action> {
        act_action(command)
    }

    fn seat_view_of(view: &pb::TableView) -> Result<Option<SeatView>, WireError> {
        seat_view_of(view)
    }
}
