//! [`AnyGame`]: every game a table can play, as one game: the registration the tables
//! service, the auditor and the client name (issue 34: a table picks its game when it is
//! created).
//!
//! A value is one match of Jeu du 10 or of French Tarot, chosen by the command that starts
//! it (from the table's options); before that it is [`AnyGame::NotStarted`]. Everything
//! the contract ([`TableGame`]) and the wire ([`WireGame`]) ask is delegated to the match's
//! game; nothing of either game's rules is here. Three things are the registry's own:
//! - **Cards** ([`AnyCard`]) are card codes of any deck a game deals, so the table's own
//!   messages (each seat's `CardsDealt`, the `TalonDealt`) read without knowing the game: a
//!   code is checked against the decks' codes, and turned into the game's card when the
//!   match's game takes it.
//! - **A deal** is one neutral event ([`AnyEvent::Dealt`]) whatever the game, so the table
//!   takes it apart and puts it back together ([`TableGame::dealt`],
//!   [`TableGame::deal_event`]) without knowing the game either; the match's game turns it
//!   into its own deal event when it applies or re-decides it.
//! - **`pass`** is both games' move: a request's `pass` is [`AnyCommand::Pass`], the pass
//!   of whichever game the table plays.
//!
//! A command or an event of the other game is refused ([`AnyError::OtherGame`]), never
//! applied: [`TableGame::apply`] ignores it (it is total), and
//! [`TableGame::verify`] reports it.

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_games::Game as JeuDu10;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::{Actor, Dealt, Layout, Outcome, Seat, TableGame};
use fairdeal_tarot::Tarot;

use crate::error::{Reason, WireError};
use crate::game::{ReadEvent, WireEvent, WireGame};

/// A match of any game a table plays (see the module).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AnyGame {
    /// Before the match starts (the game is the table's options').
    #[default]
    NotStarted,
    /// A match of Jeu du 10.
    JeuDu10(JeuDu10),
    /// A match of French Tarot.
    Tarot(Tarot),
}

/// Which game: the names tables and exports use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameKind {
    /// Jeu du 10 (`jeu_du_10`).
    JeuDu10,
    /// French Tarot (`tarot`).
    Tarot,
}

impl GameKind {
    /// The game's name (its `TableGame::NAME`).
    pub const fn name(self) -> &'static str {
        match self {
            GameKind::JeuDu10 => <JeuDu10 as TableGame>::NAME,
            GameKind::Tarot => <Tarot as TableGame>::NAME,
        }
    }

    /// The game a deck is dealt for.
    pub const fn of_deck(deck: Deck) -> Option<GameKind> {
        match deck {
            Deck::Dix | Deck::Ruff => Some(GameKind::JeuDu10),
            Deck::Tarot3 | Deck::Tarot4 | Deck::Tarot5 => Some(GameKind::Tarot),
            Deck::Bridge => None,
        }
    }
}

/// A table's options: those of one game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnyOptions {
    /// Jeu du 10's.
    JeuDu10(<JeuDu10 as TableGame>::Options),
    /// French Tarot's.
    Tarot(<Tarot as TableGame>::Options),
}

impl AnyOptions {
    /// The game these options are for.
    pub const fn kind(&self) -> GameKind {
        match self {
            AnyOptions::JeuDu10(_) => GameKind::JeuDu10,
            AnyOptions::Tarot(_) => GameKind::Tarot,
        }
    }
}

/// A command to a match.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyCommand {
    /// Jeu du 10's.
    JeuDu10(<JeuDu10 as TableGame>::Command),
    /// French Tarot's.
    Tarot(<Tarot as TableGame>::Command),
    /// A pass, in whichever game the table plays.
    Pass,
    /// Deal a hand (the neutral deal, see the module).
    Deal(Dealt<AnyCard>),
}

/// An event of a match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnyEvent {
    /// Jeu du 10's (never its deal: that is [`AnyEvent::Dealt`]).
    JeuDu10(<JeuDu10 as TableGame>::Event),
    /// French Tarot's (never its deal).
    Tarot(<Tarot as TableGame>::Event),
    /// A hand dealt, in any game.
    Dealt(Dealt<AnyCard>),
}

/// A card of any game's deck, by its code (see the module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AnyCard(&'static str);

impl AnyCard {
    /// The card coded `code` in some game's deck.
    pub fn of(code: &str) -> Option<AnyCard> {
        [Deck::Dix, Deck::Ruff, Deck::Tarot4]
            .into_iter()
            .flat_map(|deck| deck.codes().iter())
            .find(|c| **c == code)
            .map(|c| AnyCard(c))
    }

    /// Its code.
    pub const fn code(self) -> &'static str {
        self.0
    }
}

/// Why a command is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnyError {
    /// Jeu du 10's rules refuse it.
    #[error(transparent)]
    JeuDu10(<JeuDu10 as TableGame>::Error),
    /// French Tarot's rules refuse it.
    #[error(transparent)]
    Tarot(<Tarot as TableGame>::Error),
    /// A command of another game than the table's (or before its match started).
    #[error("this table plays {table}, not {command}")]
    OtherGame {
        /// The table's game (`not started` before the match).
        table: &'static str,
        /// The command's game.
        command: &'static str,
    },
    /// A deal whose cards are not the game's.
    #[error("the deal holds {0:?}, which is no card of this game")]
    NotACard(&'static str),
}

/// What a seat sees.
#[derive(Clone, Debug)]
pub enum AnySeatView {
    /// At a Jeu du 10 table (and before any match: Jeu du 10's view of none).
    JeuDu10(<JeuDu10 as TableGame>::SeatView),
    /// At a French Tarot table.
    Tarot(<Tarot as TableGame>::SeatView),
}

/// What anyone sees.
#[derive(Clone, Debug)]
pub enum AnyPublicView {
    /// At a Jeu du 10 table (and before any match).
    JeuDu10(<JeuDu10 as TableGame>::PublicView),
    /// At a French Tarot table.
    Tarot(<Tarot as TableGame>::PublicView),
}

/// A game's cards as codes.
fn codes_of<G: WireGame>(cards: &[G::Card]) -> Vec<AnyCard> {
    G::card_codes(cards)
        .iter()
        .filter_map(|code| AnyCard::of(code))
        .collect()
}

/// Codes as a game's cards.
fn cards_in<G: WireGame>(cards: &[AnyCard]) -> Result<Vec<G::Card>, AnyError> {
    cards
        .iter()
        .map(|card| {
            G::cards_of("cards", &[card.code().to_owned()])
                .ok()
                .and_then(|mut one| one.pop())
                .ok_or(AnyError::NotACard(card.code()))
        })
        .collect()
}

/// A game's deal made neutral.
fn neutral<G: WireGame>(dealt: Dealt<G::Card>) -> Dealt<AnyCard> {
    Dealt {
        hand: dealt.hand,
        dealer: dealt.dealer,
        hands: dealt.hands.iter().map(|h| codes_of::<G>(h)).collect(),
        talon: codes_of::<G>(&dealt.talon),
    }
}

/// A neutral deal as a game's deal event.
fn deal_in<G: WireGame>(dealt: &Dealt<AnyCard>) -> Result<G::Event, AnyError> {
    Ok(G::deal_event(Dealt {
        hand: dealt.hand,
        dealer: dealt.dealer,
        hands: dealt
            .hands
            .iter()
            .map(|h| cards_in::<G>(h))
            .collect::<Result<_, _>>()?,
        talon: cards_in::<G>(&dealt.talon)?,
    }))
}

/// A game's events made neutral: its deal becomes [`AnyEvent::Dealt`].
fn events_of<G: WireGame>(events: Vec<G::Event>, wrap: fn(G::Event) -> AnyEvent) -> Vec<AnyEvent> {
    events
        .into_iter()
        .map(|event| match G::dealt(&event) {
            Some(dealt) => AnyEvent::Dealt(neutral::<G>(dealt)),
            None => wrap(event),
        })
        .collect()
}

/// `match_`'s decision on `command`, made neutral.
fn decide_in<G: WireGame>(
    match_: &G,
    actor: Actor,
    command: &AnyCommand,
    own: fn(&AnyCommand) -> Option<&G::Command>,
    pass: G::Command,
    wrap: fn(G::Event) -> AnyEvent,
    error: fn(G::Error) -> AnyError,
) -> Result<Vec<AnyEvent>, AnyError> {
    let decided = match command {
        AnyCommand::Pass => match_.decide(actor, &pass),
        AnyCommand::Deal(dealt) => {
            let event = deal_in::<G>(dealt)?;
            match G::command_of(&event) {
                Some((actor, command)) => match_.decide(actor, &command),
                None => {
                    return Err(AnyError::OtherGame {
                        table: G::NAME,
                        command: "deal",
                    });
                }
            }
        }
        other => match own(other) {
            Some(command) => match_.decide(actor, command),
            None => {
                return Err(AnyError::OtherGame {
                    table: G::NAME,
                    command: command_game(other),
                });
            }
        },
    };
    decided
        .map(|events| events_of::<G>(events, wrap))
        .map_err(error)
}

/// The game a command belongs to.
fn command_game(command: &AnyCommand) -> &'static str {
    match command {
        AnyCommand::JeuDu10(_) => GameKind::JeuDu10.name(),
        AnyCommand::Tarot(_) => GameKind::Tarot.name(),
        AnyCommand::Pass | AnyCommand::Deal(_) => "any game",
    }
}

fn own_jeu_du_10(command: &AnyCommand) -> Option<&<JeuDu10 as TableGame>::Command> {
    match command {
        AnyCommand::JeuDu10(c) => Some(c),
        _ => None,
    }
}

fn own_tarot(command: &AnyCommand) -> Option<&<Tarot as TableGame>::Command> {
    match command {
        AnyCommand::Tarot(c) => Some(c),
        _ => None,
    }
}

impl TableGame for AnyGame {
    const NAME: &'static str = "any";
    type Options = AnyOptions;
    type Command = AnyCommand;
    type Event = AnyEvent;
    type Card = AnyCard;
    type Error = AnyError;
    type SeatView = AnySeatView;
    type PublicView = AnyPublicView;

    fn layout(options: &AnyOptions) -> Result<Layout, AnyError> {
        match options {
            AnyOptions::JeuDu10(o) => JeuDu10::layout(o).map_err(AnyError::JeuDu10),
            AnyOptions::Tarot(o) => Tarot::layout(o).map_err(AnyError::Tarot),
        }
    }

    fn start(options: &AnyOptions, first_dealer: Seat) -> AnyCommand {
        match options {
            AnyOptions::JeuDu10(o) => AnyCommand::JeuDu10(JeuDu10::start(o, first_dealer)),
            AnyOptions::Tarot(o) => AnyCommand::Tarot(Tarot::start(o, first_dealer)),
        }
    }

    fn start_hand(deal: &Deal) -> Result<AnyCommand, AnyError> {
        match GameKind::of_deck(deal.deck) {
            Some(GameKind::Tarot) => Tarot::start_hand(deal)
                .map(AnyCommand::Tarot)
                .map_err(AnyError::Tarot),
            // Jeu du 10's own check refuses a deck it does not deal.
            _ => JeuDu10::start_hand(deal)
                .map(AnyCommand::JeuDu10)
                .map_err(AnyError::JeuDu10),
        }
    }

    fn decide(&self, actor: Actor, command: &AnyCommand) -> Result<Vec<AnyEvent>, AnyError> {
        match (self, command) {
            // Before the match, each game's own rules answer (the start, or "the match has
            // not started"); a pass or a deal, the game of neither, hears Jeu du 10's.
            (AnyGame::NotStarted, AnyCommand::Tarot(_)) => {
                AnyGame::Tarot(Tarot::default()).decide(actor, command)
            }
            (AnyGame::NotStarted, _) => AnyGame::JeuDu10(JeuDu10::default()).decide(actor, command),
            (AnyGame::JeuDu10(g), _) => decide_in(
                g,
                actor,
                command,
                own_jeu_du_10,
                fairdeal_games::Command::Pass,
                AnyEvent::JeuDu10,
                AnyError::JeuDu10,
            ),
            (AnyGame::Tarot(g), _) => decide_in(
                g,
                actor,
                command,
                own_tarot,
                fairdeal_tarot::Command::Pass,
                AnyEvent::Tarot,
                AnyError::Tarot,
            ),
        }
    }

    fn apply(&mut self, event: &AnyEvent) {
        match (&mut *self, event) {
            (AnyGame::NotStarted, AnyEvent::JeuDu10(e)) => {
                let mut game = JeuDu10::default();
                game.apply(e);
                *self = AnyGame::JeuDu10(game);
            }
            (AnyGame::NotStarted, AnyEvent::Tarot(e)) => {
                let mut game = Tarot::default();
                game.apply(e);
                *self = AnyGame::Tarot(game);
            }
            (AnyGame::JeuDu10(g), AnyEvent::JeuDu10(e)) => g.apply(e),
            (AnyGame::Tarot(g), AnyEvent::Tarot(e)) => g.apply(e),
            (AnyGame::JeuDu10(g), AnyEvent::Dealt(d)) => {
                if let Ok(e) = deal_in::<JeuDu10>(d) {
                    g.apply(&e);
                }
            }
            (AnyGame::Tarot(g), AnyEvent::Dealt(d)) => {
                if let Ok(e) = deal_in::<Tarot>(d) {
                    g.apply(&e);
                }
            }
            // Another game's event, or a deal before any match: nothing to fold.
            _ => {}
        }
    }

    fn command_of(event: &AnyEvent) -> Option<(Actor, AnyCommand)> {
        match event {
            AnyEvent::JeuDu10(e) => {
                JeuDu10::command_of(e).map(|(a, c)| (a, AnyCommand::JeuDu10(c)))
            }
            AnyEvent::Tarot(e) => Tarot::command_of(e).map(|(a, c)| (a, AnyCommand::Tarot(c))),
            AnyEvent::Dealt(d) => Some((Actor::Table, AnyCommand::Deal(d.clone()))),
        }
    }

    fn kind(event: &AnyEvent) -> &'static str {
        match event {
            AnyEvent::JeuDu10(e) => JeuDu10::kind(e),
            AnyEvent::Tarot(e) => Tarot::kind(e),
            AnyEvent::Dealt(_) => "hand_dealt",
        }
    }

    fn seen_only_by(event: &AnyEvent) -> Option<Seat> {
        match event {
            AnyEvent::JeuDu10(e) => JeuDu10::seen_only_by(e),
            AnyEvent::Tarot(e) => Tarot::seen_only_by(e),
            AnyEvent::Dealt(_) => None,
        }
    }

    fn started(&self) -> bool {
        match self {
            AnyGame::NotStarted => false,
            AnyGame::JeuDu10(g) => g.started(),
            AnyGame::Tarot(g) => g.started(),
        }
    }

    fn deal_due(&self) -> Option<u32> {
        match self {
            AnyGame::NotStarted => None,
            AnyGame::JeuDu10(g) => g.deal_due(),
            AnyGame::Tarot(g) => g.deal_due(),
        }
    }

    fn hands_dealt(&self) -> u32 {
        match self {
            AnyGame::NotStarted => 0,
            AnyGame::JeuDu10(g) => g.hands_dealt(),
            AnyGame::Tarot(g) => g.hands_dealt(),
        }
    }

    fn turn(&self) -> Option<Seat> {
        match self {
            AnyGame::NotStarted => None,
            AnyGame::JeuDu10(g) => TableGame::turn(g),
            AnyGame::Tarot(g) => TableGame::turn(g),
        }
    }

    fn legal_commands(&self, seat: Seat) -> Vec<AnyCommand> {
        match self {
            AnyGame::NotStarted => Vec::new(),
            AnyGame::JeuDu10(g) => TableGame::legal_commands(g, seat)
                .into_iter()
                .map(AnyCommand::JeuDu10)
                .collect(),
            AnyGame::Tarot(g) => TableGame::legal_commands(g, seat)
                .into_iter()
                .map(AnyCommand::Tarot)
                .collect(),
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        match self {
            AnyGame::NotStarted => None,
            AnyGame::JeuDu10(g) => g.outcome(),
            AnyGame::Tarot(g) => g.outcome(),
        }
    }

    fn seat_view(&self, seat: Seat) -> Option<AnySeatView> {
        match self {
            AnyGame::NotStarted => {
                TableGame::seat_view(&JeuDu10::default(), seat).map(AnySeatView::JeuDu10)
            }
            AnyGame::JeuDu10(g) => TableGame::seat_view(g, seat).map(AnySeatView::JeuDu10),
            AnyGame::Tarot(g) => TableGame::seat_view(g, seat).map(AnySeatView::Tarot),
        }
    }

    fn public_view(&self) -> AnyPublicView {
        match self {
            AnyGame::NotStarted => {
                AnyPublicView::JeuDu10(TableGame::public_view(&JeuDu10::default()))
            }
            AnyGame::JeuDu10(g) => AnyPublicView::JeuDu10(TableGame::public_view(g)),
            AnyGame::Tarot(g) => AnyPublicView::Tarot(TableGame::public_view(g)),
        }
    }

    fn bot_command(view: &AnySeatView, seed: u64) -> Option<AnyCommand> {
        match view {
            AnySeatView::JeuDu10(v) => JeuDu10::bot_command(v, seed).map(AnyCommand::JeuDu10),
            AnySeatView::Tarot(v) => Tarot::bot_command(v, seed).map(AnyCommand::Tarot),
        }
    }

    fn dealt(event: &AnyEvent) -> Option<Dealt<AnyCard>> {
        match event {
            AnyEvent::Dealt(d) => Some(d.clone()),
            _ => None,
        }
    }

    fn deal_event(dealt: Dealt<AnyCard>) -> AnyEvent {
        AnyEvent::Dealt(dealt)
    }
}

/// Whether a request's action is one of French Tarot's.
fn is_tarot_action(action: &pb::act_request::Action) -> bool {
    use pb::act_request::Action as A;
    matches!(
        action,
        A::TarotBid(_)
            | A::TarotCallKing(_)
            | A::TarotDiscard(_)
            | A::TarotDeclareChelem(_)
            | A::TarotShowPoignee(_)
            | A::TarotPlayCard(_)
    )
}

/// A game's event read back, made neutral.
fn read_in<G: WireGame>(
    message: &WireEvent,
    wrap: fn(G::Event) -> AnyEvent,
) -> Option<ReadEvent<AnyGame>> {
    G::event_of(message).map(|read| {
        read.map(|(event, command)| match G::dealt(&event) {
            Some(dealt) => (AnyEvent::Dealt(neutral::<G>(dealt)), command),
            None => (wrap(event), command),
        })
    })
}

impl WireGame for AnyGame {
    fn options_message(options: &AnyOptions) -> pb::TableOptions {
        match options {
            AnyOptions::JeuDu10(o) => JeuDu10::options_message(o),
            AnyOptions::Tarot(o) => Tarot::options_message(o),
        }
    }

    /// French Tarot's when the message has its part, Jeu du 10's otherwise (an absent
    /// message is Jeu du 10's plain game, as it always was).
    fn options_of(
        field: &str,
        message: Option<&pb::TableOptions>,
    ) -> Result<AnyOptions, WireError> {
        match message {
            Some(m) if m.tarot.is_some() => {
                Tarot::options_of(field, message).map(AnyOptions::Tarot)
            }
            _ => JeuDu10::options_of(field, message).map(AnyOptions::JeuDu10),
        }
    }

    fn card_codes(cards: &[AnyCard]) -> Vec<String> {
        cards.iter().map(|c| c.code().to_owned()).collect()
    }

    fn cards_of(field: &str, codes: &[String]) -> Result<Vec<AnyCard>, WireError> {
        codes
            .iter()
            .enumerate()
            .map(|(i, code)| {
                AnyCard::of(code).ok_or_else(|| {
                    WireError::new(
                        format!("{field}[{i}]"),
                        Reason::Unrecognised {
                            what: "card code",
                            value: code.chars().take(16).collect(),
                        },
                    )
                })
            })
            .collect()
    }

    fn event_message(
        table_id: &str,
        event: &AnyEvent,
        command: Option<pb::CommandRef>,
    ) -> WireEvent {
        match event {
            AnyEvent::JeuDu10(e) => JeuDu10::event_message(table_id, e, command),
            AnyEvent::Tarot(e) => Tarot::event_message(table_id, e, command),
            // A deal's public part, the same for every game: the cards are recorded by the
            // table apart, and the seeds by the table's own `HandStarted`.
            AnyEvent::Dealt(d) => WireEvent::HandStarted(crate::table::hand_started_message(
                table_id,
                d.hand,
                d.dealer,
                String::new(),
                String::new(),
            )),
        }
    }

    fn event_of(message: &WireEvent) -> Option<ReadEvent<AnyGame>> {
        read_in::<JeuDu10>(message, AnyEvent::JeuDu10)
            .or_else(|| read_in::<Tarot>(message, AnyEvent::Tarot))
    }

    fn private_to(message: &WireEvent) -> Result<Option<Seat>, WireError> {
        match <JeuDu10 as WireGame>::private_to(message)? {
            Some(seat) => Ok(Some(seat)),
            None => <Tarot as WireGame>::private_to(message),
        }
    }

    fn stored_event(
        event_type: &str,
        payload: &[u8],
    ) -> Option<Result<WireEvent, prost::DecodeError>> {
        JeuDu10::stored_event(event_type, payload)
            .or_else(|| Tarot::stored_event(event_type, payload))
    }

    fn stored_message(message: &WireEvent) -> Option<(String, Vec<u8>)> {
        JeuDu10::stored_message(message).or_else(|| Tarot::stored_message(message))
    }

    fn game_view(view: &AnyPublicView) -> pb::GameView {
        match view {
            AnyPublicView::JeuDu10(v) => JeuDu10::game_view(v),
            AnyPublicView::Tarot(v) => Tarot::game_view(v),
        }
    }

    fn seat_game_view(view: &AnySeatView) -> pb::GameView {
        match view {
            AnySeatView::JeuDu10(v) => JeuDu10::seat_game_view(v),
            AnySeatView::Tarot(v) => Tarot::seat_game_view(v),
        }
    }

    fn act_command(request: &pb::ActRequest) -> Result<AnyCommand, WireError> {
        match &request.action {
            Some(pb::act_request::Action::Pass(_)) => Ok(AnyCommand::Pass),
            Some(action) if is_tarot_action(action) => {
                Tarot::act_command(request).map(AnyCommand::Tarot)
            }
            _ => JeuDu10::act_command(request).map(AnyCommand::JeuDu10),
        }
    }

    fn act_action(command: &AnyCommand) -> Option<pb::act_request::Action> {
        match command {
            AnyCommand::JeuDu10(c) => JeuDu10::act_action(c),
            AnyCommand::Tarot(c) => Tarot::act_action(c),
            AnyCommand::Pass => Some(pb::act_request::Action::Pass(pb::PassAction {})),
            AnyCommand::Deal(_) => None,
        }
    }

    fn seat_view_of(view: &pb::TableView) -> Result<Option<AnySeatView>, WireError> {
        let tarot = view.game.as_ref().is_some_and(|g| g.tarot.is_some());
        if tarot {
            Tarot::seat_view_of(view).map(|v| v.map(AnySeatView::Tarot))
        } else {
            JeuDu10::seat_view_of(view).map(|v| v.map(AnySeatView::JeuDu10))
        }
    }
}
