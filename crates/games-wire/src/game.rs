//! [`WireGame`]: a game's half of the wire, what the tables service, the auditor and the
//! client need of the game's messages beside the contract ([`TableGame`]) itself.
//!
//! A table's own messages (its creation, seats, seeds, the deal's public part and each
//! seat's cards, clocks, the end) are the tables service's and the same for every game;
//! each game brings the rest: its options, its cards' codes, the messages of its events
//! (which the store holds by type name and the wire's `TableEvent` carries as variants),
//! its part of a caller's view, and its moves. A second game implements this for its type
//! beside its proto messages (the options message, `GameView` and `ActRequest` then carry
//! the game's own fields or variants); the callers stay as they are.

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::{Seat, TableGame};

use crate::error::WireError;

/// A wire `TableEvent` variant.
pub type WireEvent = pb::table_event::Event;

/// A game's event read from its message, with the reference to the command it carries.
pub type ReadEvent<G> = Result<(<G as TableGame>::Event, Option<pb::CommandRef>), WireError>;

/// A game's messages (see the module).
pub trait WireGame: TableGame {
    /// The options as their message.
    fn options_message(options: &Self::Options) -> pb::TableOptions;

    /// The options of `message` in `field` (absent: an error naming it).
    fn options_of(
        field: &str,
        message: Option<&pb::TableOptions>,
    ) -> Result<Self::Options, WireError>;

    /// Cards as their codes, in order.
    fn card_codes(cards: &[Self::Card]) -> Vec<String>;

    /// The cards coded `codes` in `field`.
    fn cards_of(field: &str, codes: &[String]) -> Result<Vec<Self::Card>, WireError>;

    /// An event of table `table_id` as the variant that records it; the events a seat's
    /// command causes first carry `command`. A deal ([`TableGame::dealt`]) is recorded by
    /// the table apart (its public `HandStarted`, each seat's `CardsDealt`): this gives its
    /// public part only.
    fn event_message(
        table_id: &str,
        event: &Self::Event,
        command: Option<pb::CommandRef>,
    ) -> WireEvent;

    /// A variant back as this game's event and the command it carries, every field
    /// checked; `None` when the variant is none of this game's events (a table's own, a
    /// deal's parts, another game's).
    fn event_of(message: &WireEvent) -> Option<ReadEvent<Self>>;

    /// The one seat that may see `message`, one of this game's event variants, before the
    /// game finishes (a card the rules show only to that seat: Tarot's écart); `None`: the
    /// event is public as far as the game is concerned. The deal's parts (`CardsDealt`,
    /// `TalonDealt`) are the table's own to classify. A seat that does not map is an
    /// error, never a public event.
    fn private_to(message: &WireEvent) -> Result<Option<Seat>, WireError>;

    /// A stored message of one of this game's event types (its full protobuf name) as the
    /// variant that carries it; `None` for any other type.
    fn stored_event(
        event_type: &str,
        payload: &[u8],
    ) -> Option<Result<WireEvent, prost::DecodeError>>;

    /// This game's variant as it is stored: its type's full name and its bytes; `None`
    /// for a variant that is not this game's.
    fn stored_message(message: &WireEvent) -> Option<(String, Vec<u8>)>;

    /// What anyone sees of the game.
    fn game_view(view: &Self::PublicView) -> pb::GameView;

    /// What a seat's player sees of the game: the public view, their hand, their moves.
    fn seat_game_view(view: &Self::SeatView) -> pb::GameView;

    /// The command of a seat's `ActRequest` (an error names the field).
    fn act_command(request: &pb::ActRequest) -> Result<Self::Command, WireError>;

    /// A seat's command as an `ActRequest`'s action; `None` for the table's own commands.
    fn act_action(command: &Self::Command) -> Option<pb::act_request::Action>;

    /// The seat's view a `TableView` shows its player; `None` for a spectator's, or before
    /// the game.
    fn seat_view_of(view: &pb::TableView) -> Result<Option<Self::SeatView>, WireError>;
}

/// A game's event message as it is stored: its type's full name and its bytes (what
/// [`WireGame::stored_message`] gives for each of the game's variants).
pub(crate) fn stored<M: prost::Message + prost::Name>(m: &M) -> (String, Vec<u8>) {
    (M::full_name(), m.encode_to_vec())
}

/// A stored event's bytes decoded as `M` and wrapped as its variant (what
/// [`WireGame::stored_event`] gives for each of the game's types).
pub(crate) fn decode<M: prost::Message + Default>(
    payload: &[u8],
    wrap: fn(M) -> WireEvent,
) -> Result<WireEvent, prost::DecodeError> {
    M::decode(payload).map(wrap)
}
