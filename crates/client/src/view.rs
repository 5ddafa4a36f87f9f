//! A seat's `GetTable` view (the wire) read as the game's seat view, and the game's bot
//! choosing the seat's move from it, as a wire action: what a client needs to let the game
//! play its seat.
//!
//! The view is read through the game's contract and wire mapping
//! (`fairdeal_table_game::TableGame`, `fairdeal_games_wire::WireGame`), the ones the service
//! writes it with. Everything here reads only what the server sent to this seat; a
//! malformed view (a card code the game does not know, a seat out of range) is a
//! [`ViewError`] naming the field, never a panic.

use fairdeal_games_wire::{WireError, WireGame};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::act_request::Action;

/// The game the client's bot plays: Jeu du 10.
type Played = fairdeal_games_wire::any::AnyGame;

/// A view the engine cannot read: the server sent something this client does not
/// understand (a newer protocol, or a bug); the field is named, with why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable table view: {0}")]
pub struct ViewError(#[from] pub WireError);

impl ViewError {
    /// `field` is absent (e.g. a `GetTable` answer without its table).
    pub fn missing(field: &str) -> Self {
        ViewError(WireError::missing(field))
    }
}

/// The move the game's bot (seeded with `seed`) makes from the caller's view, as a wire
/// action; `None` when the caller has nothing to do (or holds no seat).
pub fn choose(view: &pb::TableView, seed: u64) -> Result<Option<Action>, ViewError> {
    choose_for::<Played>(view, seed)
}

/// [`choose`] for game `G`.
fn choose_for<G: WireGame>(view: &pb::TableView, seed: u64) -> Result<Option<Action>, ViewError> {
    let Some(seat_view) = G::seat_view_of(view)? else {
        return Ok(None);
    };
    Ok(G::bot_command(&seat_view, seed)
        .as_ref()
        .and_then(G::act_action))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use fairdeal_games::TableOptions;
    use fairdeal_games::sim;
    use fairdeal_games_wire::jeu_du_10::{legal_action, options_message, seat_game_view};

    use super::*;

    /// The view of the seat to act at the first turn of a match, as the service writes it.
    fn first_turn() -> (pb::TableView, Vec<pb::LegalAction>) {
        let game = sim::first_turn(TableOptions::default()).unwrap();
        let seen = game.seat_view(game.turn().unwrap());
        let legal = seen.legal.iter().filter_map(legal_action).collect();
        let view = pb::TableView {
            version: seen.table.version,
            options: Some(options_message(&TableOptions::default())),
            game: Some(seat_game_view(&seen)),
            ..pb::TableView::default()
        };
        (view, legal)
    }

    #[test]
    fn the_bot_chooses_a_move_its_view_offers() {
        let (view, legal) = first_turn();
        let action = choose(&view, 7).unwrap().unwrap();
        let offered = legal.iter().any(|l| match (&l.action, &action) {
            (Some(pb::legal_action::Action::Bid(a)), Action::Bid(b)) => a == b,
            (Some(pb::legal_action::Action::Pass(_)), Action::Pass(_)) => true,
            _ => false,
        });
        assert!(offered, "{action:?} is not among {legal:?}");
    }

    #[test]
    fn a_malformed_view_names_its_field() {
        let (mut view, _) = first_turn();
        view.game.as_mut().unwrap().turn = Some(4);
        let error = choose(&view, 7).unwrap_err();
        assert_eq!(error.0.field, "game.turn");
        assert_eq!(
            error.to_string(),
            "unreadable table view: game.turn: 4 is out of range (0..=3)"
        );
        // A spectator (no seat) has nothing to do.
        view.game.as_mut().unwrap().my_seat = None;
        assert_eq!(choose(&view, 7), Ok(None));
    }
}
