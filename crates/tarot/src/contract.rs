//! The contracts, the poignées and the chelem, with the numbers the FFT rules give them.

use serde::{Deserialize, Serialize};

/// A bid (enchère), from the lowest: each bid must be higher than the last (FFT, "les
/// enchères").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Contract {
    /// Petite (prise): the chien is shown, taken and an écart made; x1.
    Petite,
    /// Garde: as the petite; x2.
    Garde,
    /// Garde sans le chien: the chien stays unseen and counts for the taker; x4.
    GardeSans,
    /// Garde contre le chien: the chien stays unseen and counts for the defence; x6.
    GardeContre,
}

impl Contract {
    /// Every contract, lowest first.
    pub const ALL: [Contract; 4] = [
        Contract::Petite,
        Contract::Garde,
        Contract::GardeSans,
        Contract::GardeContre,
    ];

    /// The multiplier of the contract score: 1, 2, 4, 6.
    pub const fn multiplier(self) -> i32 {
        match self {
            Contract::Petite => 1,
            Contract::Garde => 2,
            Contract::GardeSans => 4,
            Contract::GardeContre => 6,
        }
    }

    /// Whether the chien is shown to all and taken by the taker (petite and garde).
    pub const fn shows_chien(self) -> bool {
        matches!(self, Contract::Petite | Contract::Garde)
    }

    /// The contract's name as the wire writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Contract::Petite => "petite",
            Contract::Garde => "garde",
            Contract::GardeSans => "garde_sans",
            Contract::GardeContre => "garde_contre",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A poignée (handful of trumps shown before one's first card).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Poignee {
    /// Simple: 13, 10 or 8 trumps at 3, 4, 5 players; worth 20.
    Simple,
    /// Double: 15, 13 or 10 trumps; worth 30.
    Double,
    /// Triple: 18, 15 or 13 trumps; worth 40.
    Triple,
}

impl Poignee {
    /// Every poignée, smallest first.
    pub const ALL: [Poignee; 3] = [Poignee::Simple, Poignee::Double, Poignee::Triple];

    /// The trumps a poignée shows at a table of `seats` seats.
    pub const fn trumps(self, seats: usize) -> usize {
        let counts = match seats {
            3 => [13, 15, 18],
            5 => [8, 10, 13],
            _ => [10, 13, 15],
        };
        counts[self as usize]
    }

    /// The poignée that shows exactly `count` trumps at `seats` seats.
    pub fn of_count(count: usize, seats: usize) -> Option<Poignee> {
        Poignee::ALL.into_iter().find(|p| p.trumps(seats) == count)
    }

    /// Its bonus, never multiplied: 20, 30, 40.
    pub const fn bonus(self) -> i32 {
        match self {
            Poignee::Simple => 20,
            Poignee::Double => 30,
            Poignee::Triple => 40,
        }
    }
}

/// The side of a deal: the taker (with a called partner at 5) or the defence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Camp {
    /// The taker and, at 5, the called partner.
    Attack,
    /// Everybody else.
    Defence,
}

/// How a deal ended with respect to the chelem (slam: every trick).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Chelem {
    /// No side took every trick and none was announced.
    #[default]
    None,
    /// Announced by the taker and made: +400.
    AnnouncedMade,
    /// Made by the attack without an announcement: +200.
    Made,
    /// Announced by the taker and not made: -200.
    AnnouncedFailed,
    /// The defence took every trick (nothing announced): -200 for the attack.
    Defence,
}

impl Chelem {
    /// The bonus for the attack, never multiplied.
    pub const fn bonus(self) -> i32 {
        match self {
            Chelem::None => 0,
            Chelem::AnnouncedMade => 400,
            Chelem::Made => 200,
            Chelem::AnnouncedFailed | Chelem::Defence => -200,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contracts_climb_and_multiply() {
        assert!(Contract::Petite < Contract::Garde);
        assert!(Contract::GardeSans < Contract::GardeContre);
        assert_eq!(Contract::ALL.map(Contract::multiplier), [1, 2, 4, 6]);
        assert_eq!(
            Contract::ALL.map(Contract::shows_chien),
            [true, true, false, false]
        );
    }

    #[test]
    fn poignee_sizes_per_table() {
        assert_eq!(Poignee::ALL.map(|p| p.trumps(3)), [13, 15, 18]);
        assert_eq!(Poignee::ALL.map(|p| p.trumps(4)), [10, 13, 15]);
        assert_eq!(Poignee::ALL.map(|p| p.trumps(5)), [8, 10, 13]);
        assert_eq!(Poignee::of_count(13, 4), Some(Poignee::Double));
        assert_eq!(Poignee::of_count(11, 4), None);
        assert_eq!(Poignee::ALL.map(Poignee::bonus), [20, 30, 40]);
    }
}
