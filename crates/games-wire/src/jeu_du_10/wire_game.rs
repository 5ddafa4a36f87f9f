//! [`WireGame`] for Jeu du 10: the mapping of this module, through the trait the tables
//! service, the auditor and the client take a game's messages by.

use fairdeal_games::{Card, Command, Event, Game, PublicView, SeatView, TableOptions};
use fairdeal_proto::fairdeal::tables::v1 as pb;

use super::{
    EventMessage, act_action, bid_of, card_codes, card_of, cards_of, engine_message, game_view,
    options_message, options_of, seat_game_view, seat_view_of, suit_of,
};
use crate::error::{Reason, WireError};
use crate::game::{ReadEvent, WireEvent, WireGame, decode, stored};

fn read<M: EventMessage>(m: &M) -> Result<(Event, Option<pb::CommandRef>), WireError> {
    Ok((m.event()?, m.command().cloned()))
}

impl WireGame for Game {
    fn options_message(options: &TableOptions) -> pb::TableOptions {
        options_message(options)
    }

    fn options_of(
        field: &str,
        message: Option<&pb::TableOptions>,
    ) -> Result<TableOptions, WireError> {
        options_of(field, message)
    }

    fn card_codes(cards: &[Card]) -> Vec<String> {
        card_codes(cards)
    }

    fn cards_of(field: &str, codes: &[String]) -> Result<Vec<Card>, WireError> {
        cards_of(field, codes)
    }

    fn event_message(table_id: &str, event: &Event, command: Option<pb::CommandRef>) -> WireEvent {
        engine_message(table_id, event, command).into_wire()
    }

    fn event_of(message: &WireEvent) -> Option<ReadEvent<Game>> {
        use WireEvent as W;
        Some(match message {
            W::MatchStarted(m) => read(m),
            W::BidPlaced(m) => read(m),
            W::PlayerPassed(m) => read(m),
            W::AuctionWon(m) => read(m),
            W::TrumpNamed(m) => read(m),
            W::CardPlayed(m) => read(m),
            W::TrickWon(m) => read(m),
            W::HandScored(m) => read(m),
            W::MatchWon(m) => read(m),
            _ => return None,
        })
    }

    /// Jeu du 10 has no private event of its own: its hands are the table's `CardsDealt`.
    fn private_to(_message: &WireEvent) -> Result<Option<fairdeal_table_game::Seat>, WireError> {
        Ok(None)
    }

    fn stored_event(
        event_type: &str,
        payload: &[u8],
    ) -> Option<Result<WireEvent, prost::DecodeError>> {
        use WireEvent as W;
        let name = event_type.strip_prefix("fairdeal.tables.v1.")?;
        Some(match name {
            "MatchStarted" => decode(payload, W::MatchStarted),
            "BidPlaced" => decode(payload, W::BidPlaced),
            "PlayerPassed" => decode(payload, W::PlayerPassed),
            "AuctionWon" => decode(payload, W::AuctionWon),
            "TrumpNamed" => decode(payload, W::TrumpNamed),
            "CardPlayed" => decode(payload, W::CardPlayed),
            "TrickWon" => decode(payload, W::TrickWon),
            "HandScored" => decode(payload, W::HandScored),
            "MatchWon" => decode(payload, W::MatchWon),
            _ => return None,
        })
    }

    fn stored_message(message: &WireEvent) -> Option<(String, Vec<u8>)> {
        use WireEvent as W;
        Some(match message {
            W::MatchStarted(m) => stored(m),
            W::BidPlaced(m) => stored(m),
            W::PlayerPassed(m) => stored(m),
            W::AuctionWon(m) => stored(m),
            W::TrumpNamed(m) => stored(m),
            W::CardPlayed(m) => stored(m),
            W::TrickWon(m) => stored(m),
            W::HandScored(m) => stored(m),
            W::MatchWon(m) => stored(m),
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
        use pb::act_request::Action;
        Ok(match &request.action {
            Some(Action::Bid(bid)) => Command::Bid {
                bid: bid_of("bid", Some(bid))?,
            },
            Some(Action::Pass(_)) => Command::Pass,
            Some(Action::NameTrump(suit)) => Command::NameTrump {
                suit: suit_of("name_trump", *suit)?,
            },
            Some(Action::PlayCard(code)) => Command::PlayCard {
                card: card_of("play_card", code)?,
            },
            Some(
                Action::TarotBid(_)
                | Action::TarotCallKing(_)
                | Action::TarotDiscard(_)
                | Action::TarotDeclareChelem(_)
                | Action::TarotShowPoignee(_)
                | Action::TarotPlayCard(_),
            ) => {
                return Err(WireError::new(
                    "action",
                    Reason::Invalid("a French Tarot move, not a Jeu du 10 table's"),
                ));
            }
            None => {
                return Err(WireError::new(
                    "action",
                    Reason::Invalid("one of bid, pass, name_trump, play_card is required"),
                ));
            }
        })
    }

    fn act_action(command: &Command) -> Option<pb::act_request::Action> {
        act_action(command)
    }

    fn seat_view_of(view: &pb::TableView) -> Result<Option<SeatView>, WireError> {
        seat_view_of(view)
    }
}
