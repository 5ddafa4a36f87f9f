//! Seats and teams.
//!
//! Seats 0..3 sit clockwise; teams are {0, 2} and {1, 3}. Both are validated newtypes that
//! serialise as plain integers, so a seat read from the wire can never be out of range.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One of the four seats, clockwise from 0.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(try_from = "u8", into = "u8")]
pub struct Seat(u8);

/// A seat number that is not 0, 1, 2 or 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("seat {0} does not exist (seats are 0, 1, 2, 3)")]
pub struct BadSeat(pub u8);

impl Seat {
    /// All seats, clockwise from seat 0.
    pub const ALL: [Seat; 4] = [Seat(0), Seat(1), Seat(2), Seat(3)];

    /// The seat numbered `n` (0..4).
    pub const fn new(n: u8) -> Option<Seat> {
        if n < 4 { Some(Seat(n)) } else { None }
    }

    /// The seat number, as an index into per-seat arrays.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The seat number.
    pub const fn number(self) -> u8 {
        self.0
    }

    /// The next seat clockwise (the player on this seat's left).
    pub const fn next(self) -> Seat {
        Seat((self.0 + 1) % 4)
    }

    /// The seat `steps` places clockwise from this one.
    pub const fn offset(self, steps: usize) -> Seat {
        Seat(((self.0 as usize + steps % 4) % 4) as u8)
    }

    /// The seat's team.
    pub const fn team(self) -> Team {
        Team(self.0 % 2)
    }

    /// The partner, across the table.
    pub const fn partner(self) -> Seat {
        Seat((self.0 + 2) % 4)
    }
}

impl TryFrom<u8> for Seat {
    type Error = BadSeat;

    fn try_from(n: u8) -> Result<Self, Self::Error> {
        Seat::new(n).ok_or(BadSeat(n))
    }
}

impl From<Seat> for u8 {
    fn from(seat: Seat) -> u8 {
        seat.0
    }
}

impl fmt::Display for Seat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seat {}", self.0)
    }
}

/// One of the two teams: team 0 is seats {0, 2}, team 1 is seats {1, 3}.
///
/// Per-team arrays (`[i32; 2]`) in events and views are indexed by the team number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Team(u8);

/// A team number that is not 0 or 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("team {0} does not exist (teams are 0 and 1)")]
pub struct BadTeam(pub u8);

impl Team {
    /// Both teams.
    pub const ALL: [Team; 2] = [Team(0), Team(1)];

    /// The team numbered `n` (0 or 1).
    pub const fn new(n: u8) -> Option<Team> {
        if n < 2 { Some(Team(n)) } else { None }
    }

    /// The team number, as an index into per-team arrays.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The other team.
    pub const fn other(self) -> Team {
        Team(1 - self.0)
    }

    /// The team's two seats.
    pub const fn seats(self) -> [Seat; 2] {
        [Seat(self.0), Seat(self.0 + 2)]
    }
}

impl TryFrom<u8> for Team {
    type Error = BadTeam;

    fn try_from(n: u8) -> Result<Self, Self::Error> {
        Team::new(n).ok_or(BadTeam(n))
    }
}

impl From<Team> for u8 {
    fn from(team: Team) -> u8 {
        team.0
    }
}

impl fmt::Display for Team {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "team {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_and_teams() {
        let s = |n| Seat::new(n).unwrap();
        assert_eq!(s(3).next(), s(0));
        assert_eq!(s(1).partner(), s(3));
        assert_eq!(s(2).offset(3), s(1));
        assert_eq!(s(2).team(), Team::ALL[0]);
        assert_eq!(s(3).team(), Team::ALL[1]);
        assert_eq!(Team::ALL[1].seats(), [s(1), s(3)]);
        assert_eq!(Team::ALL[1].other(), Team::ALL[0]);
        assert_eq!(Seat::new(4), None);
        assert_eq!(Team::new(2), None);
    }

    #[test]
    fn wire_form_is_validated() {
        assert_eq!(serde_json::to_string(&Seat::ALL[2]).unwrap(), "2");
        assert_eq!(serde_json::from_str::<Seat>("3").unwrap(), Seat::ALL[3]);
        let err = serde_json::from_str::<Seat>("4").unwrap_err().to_string();
        assert!(err.contains("seat 4 does not exist"), "{err}");
        assert!(serde_json::from_str::<Team>("2").is_err());
    }
}
