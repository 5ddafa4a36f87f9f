//! The table's own values, the same for every game: seats (0 up to the table's size),
//! the reference a move carries to its command, the turn it leaves, a hand's public start.

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::{MAX_SEATS, Seat};

use crate::error::{Reason, WireError};

/// A seat's number on the wire.
pub fn seat_number(seat: Seat) -> u32 {
    u32::from(seat.number())
}

/// The seat numbered `n` in `field` (any table's: below [`MAX_SEATS`]; whether the table
/// has it is the table's to say).
pub fn seat_of(field: &str, n: u32) -> Result<Seat, WireError> {
    Seat::at(n, MAX_SEATS).ok_or_else(|| {
        WireError::new(
            field,
            Reason::OutOfRange {
                value: n.into(),
                range: "0..=4",
            },
        )
    })
}

/// The reference a move's message carries to its command.
pub fn command_message(
    command_id: String,
    version_after: u64,
    next_turn: Option<(Seat, i64)>,
) -> pb::CommandRef {
    pb::CommandRef {
        command_id,
        version_after,
        next_turn: next_turn.map(|(seat, deadline_ms)| pb::Turn {
            seat: seat_number(seat),
            deadline_ms,
        }),
    }
}

/// The turn a command left the table in, from its reference (fields named relative to it:
/// `next_turn.seat`).
pub fn next_turn_of(command: &pb::CommandRef) -> Result<Option<(Seat, i64)>, WireError> {
    command
        .next_turn
        .as_ref()
        .map(|turn| Ok((seat_of("next_turn.seat", turn.seat)?, turn.deadline_ms)))
        .transpose()
}

/// Hand `hand` of table `table_id`, dealt by `dealer` from `commitment`'s seed and
/// `client_seed` (the salt is the hand number, SPEC section 4).
pub fn hand_started_message(
    table_id: &str,
    hand: u32,
    dealer: Seat,
    commitment: String,
    client_seed: String,
) -> pb::HandStarted {
    pb::HandStarted {
        table_id: table_id.to_owned(),
        hand,
        dealer: seat_number(dealer),
        salt: hand.to_string(),
        commitment,
        client_seed,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn seats_and_turns_read_back_as_written_and_a_seat_past_five_is_refused() {
        for seat in Seat::all(MAX_SEATS) {
            assert_eq!(seat_of("seat", seat_number(seat)), Ok(seat));
            let command = command_message("c".into(), 3, Some((seat, 9)));
            assert_eq!(next_turn_of(&command), Ok(Some((seat, 9))));
        }
        assert_eq!(
            seat_of("seat", 5).unwrap_err().to_string(),
            "seat: 5 is out of range (0..=4)"
        );
        let command = command_message("c".into(), 3, None);
        assert_eq!(next_turn_of(&command), Ok(None));
    }

    /// A command whose next turn names no seat is refused, the seat's path named.
    #[test]
    fn a_command_whose_next_turn_names_no_seat_is_refused() {
        let command = pb::CommandRef {
            command_id: "c-1".into(),
            version_after: 9,
            next_turn: Some(pb::Turn {
                seat: 5,
                deadline_ms: 1,
            }),
        };
        assert_eq!(
            next_turn_of(&command)
                .map_err(|e| e.within("command"))
                .unwrap_err()
                .to_string(),
            "command.next_turn.seat: 5 is out of range (0..=4)"
        );
    }
}
