//! The refusals every game makes the same way: a command before the match or after it, from
//! the wrong sender, from a seat the table does not have, in the wrong phase or out of turn.
//!
//! A game's error embeds [`ContractError`] (Jeu du 10's and French Tarot's `RuleError` as
//! `RuleError::Contract`), so these refusals read the same in every game, and the checks
//! that make them ([`ContractError::sender`], [`ContractError::deal_due`],
//! [`ContractError::in_phase`], [`ContractError::turn`]) are written once.

use std::fmt;

use crate::Seat;

/// Where a match stands, as far as the contract is concerned: every game's phase has a
/// phase before the match, one waiting for the table to deal, and one once it is over.
/// Displayed as what a refused command reads (`"the match is over"`).
pub trait MatchPhase: Copy + Eq + fmt::Debug + fmt::Display {
    /// Before the match starts.
    const NOT_STARTED: Self;
    /// Between hands: the table must deal the next one.
    const AWAITING_DEAL: Self;
    /// The match is over.
    const FINISHED: Self;
}

/// Why a game refuses a command, for the reasons every game shares; `P` is the game's
/// phase ([`MatchPhase`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError<P: MatchPhase> {
    /// The command needs a started match.
    #[error("the match has not started")]
    MatchNotStarted,
    /// `start_match` was sent twice.
    #[error("the match has already started")]
    MatchAlreadyStarted,
    /// The match is over; nothing more can happen.
    #[error("the match is over")]
    MatchOver,
    /// A seat the table does not have.
    #[error("seat {seat} does not exist (seats are {})", SeatList(*seats))]
    NoSuchSeat {
        /// The seat number.
        seat: u8,
        /// The seats at the table.
        seats: usize,
    },
    /// A seat sent a command only the table may send.
    #[error("only the table may {command}")]
    TableOnly {
        /// The command's name.
        command: &'static str,
    },
    /// The table sent a command that a seat must send.
    #[error("{command} must come from a seat")]
    SeatOnly {
        /// The command's name.
        command: &'static str,
    },
    /// The command does not fit the current phase.
    #[error("cannot {command} now: {phase}")]
    WrongPhase {
        /// The command's name.
        command: &'static str,
        /// The current phase.
        phase: P,
    },
    /// Another seat must act.
    #[error("not your turn: {seat} tried to act, it is {}'s turn", turn.map_or_else(|| "nobody".to_owned(), |s| s.to_string()))]
    NotYourTurn {
        /// The seat that tried to act.
        seat: Seat,
        /// The seat that must act.
        turn: Option<Seat>,
    },
}

/// The seats of a table of `n` seats, as a refusal lists them (`0, 1, 2, 3`).
struct SeatList(usize);

impl fmt::Display for SeatList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seat) in Seat::all(self.0).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", seat.number())?;
        }
        Ok(())
    }
}

impl<P: MatchPhase> ContractError<P> {
    /// Whether a command named `command` may come from its sender: a command of the table
    /// (`table_command`) only from the table (`from_table`), any other only from a seat.
    pub fn sender(
        from_table: bool,
        table_command: bool,
        command: &'static str,
    ) -> Result<(), Self> {
        match (from_table, table_command) {
            (false, true) => Err(ContractError::TableOnly { command }),
            (true, false) => Err(ContractError::SeatOnly { command }),
            _ => Ok(()),
        }
    }

    /// Whether the table may deal now (`phase` is [`MatchPhase::AWAITING_DEAL`]), for the
    /// table's command `command` that deals.
    pub fn deal_due(phase: P, command: &'static str) -> Result<(), Self> {
        if phase == P::AWAITING_DEAL {
            Ok(())
        } else if phase == P::NOT_STARTED {
            Err(ContractError::MatchNotStarted)
        } else if phase == P::FINISHED {
            Err(ContractError::MatchOver)
        } else {
            Err(ContractError::WrongPhase { command, phase })
        }
    }

    /// Whether a seat's command `command`, which belongs to phase `expected`, fits the
    /// match's `phase`: not once the match is over, not in another phase.
    pub fn in_phase(phase: P, expected: P, command: &'static str) -> Result<(), Self> {
        if phase == P::FINISHED {
            Err(ContractError::MatchOver)
        } else if phase != expected {
            Err(ContractError::WrongPhase { command, phase })
        } else {
            Ok(())
        }
    }

    /// Whether it is `seat`'s turn, `turn` being the seat that must act.
    pub fn turn(seat: Seat, turn: Option<Seat>) -> Result<(), Self> {
        if turn == Some(seat) {
            Ok(())
        } else {
            Err(ContractError::NotYourTurn { seat, turn })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Phase {
        Before,
        Dealing,
        Playing,
        Over,
    }

    impl fmt::Display for Phase {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                Phase::Before => "the match has not started",
                Phase::Dealing => "the next hand has not been dealt",
                Phase::Playing => "the cards are being played",
                Phase::Over => "the match is over",
            })
        }
    }

    impl MatchPhase for Phase {
        const NOT_STARTED: Phase = Phase::Before;
        const AWAITING_DEAL: Phase = Phase::Dealing;
        const FINISHED: Phase = Phase::Over;
    }

    type Error = ContractError<Phase>;

    fn seat(n: u8) -> Seat {
        Seat::new(n).unwrap_or_default()
    }

    #[test]
    fn each_check_refuses_with_the_rule_it_names() {
        assert_eq!(Error::sender(true, true, "start_match"), Ok(()));
        assert_eq!(Error::sender(false, false, "pass"), Ok(()));
        assert_eq!(
            Error::sender(false, true, "start_match"),
            Err(Error::TableOnly {
                command: "start_match"
            })
        );
        assert_eq!(
            Error::sender(true, false, "pass"),
            Err(Error::SeatOnly { command: "pass" })
        );
        assert_eq!(Error::deal_due(Phase::Dealing, "start_hand"), Ok(()));
        assert_eq!(
            Error::deal_due(Phase::Before, "start_hand"),
            Err(Error::MatchNotStarted)
        );
        assert_eq!(
            Error::deal_due(Phase::Over, "start_hand"),
            Err(Error::MatchOver)
        );
        assert_eq!(
            Error::deal_due(Phase::Playing, "start_hand"),
            Err(Error::WrongPhase {
                command: "start_hand",
                phase: Phase::Playing
            })
        );
        assert_eq!(Error::in_phase(Phase::Playing, Phase::Playing, "x"), Ok(()));
        assert_eq!(
            Error::in_phase(Phase::Over, Phase::Playing, "x"),
            Err(Error::MatchOver)
        );
        assert_eq!(
            Error::in_phase(Phase::Dealing, Phase::Playing, "play_card"),
            Err(Error::WrongPhase {
                command: "play_card",
                phase: Phase::Dealing
            })
        );
        assert_eq!(Error::turn(seat(1), Some(seat(1))), Ok(()));
        assert_eq!(
            Error::turn(seat(1), None),
            Err(Error::NotYourTurn {
                seat: seat(1),
                turn: None
            })
        );
    }

    #[test]
    fn refusals_read_as_the_games_have_always_written_them() {
        let msg = |e: Error| e.to_string();
        assert_eq!(
            msg(Error::NoSuchSeat { seat: 4, seats: 4 }),
            "seat 4 does not exist (seats are 0, 1, 2, 3)"
        );
        assert_eq!(
            msg(Error::NoSuchSeat { seat: 5, seats: 5 }),
            "seat 5 does not exist (seats are 0, 1, 2, 3, 4)"
        );
        assert_eq!(
            msg(Error::NotYourTurn {
                seat: seat(0),
                turn: Some(seat(3))
            }),
            "not your turn: seat 0 tried to act, it is seat 3's turn"
        );
        assert_eq!(
            msg(Error::NotYourTurn {
                seat: seat(0),
                turn: None
            }),
            "not your turn: seat 0 tried to act, it is nobody's turn"
        );
        assert_eq!(
            msg(Error::WrongPhase {
                command: "play_card",
                phase: Phase::Dealing
            }),
            "cannot play_card now: the next hand has not been dealt"
        );
        assert_eq!(msg(Error::MatchNotStarted), "the match has not started");
        assert_eq!(
            msg(Error::MatchAlreadyStarted),
            "the match has already started"
        );
        assert_eq!(msg(Error::MatchOver), "the match is over");
        assert_eq!(
            msg(Error::TableOnly {
                command: "start_match"
            }),
            "only the table may start_match"
        );
        assert_eq!(
            msg(Error::SeatOnly { command: "pass" }),
            "pass must come from a seat"
        );
    }
}
