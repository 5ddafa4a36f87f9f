//! BigDeal-compatible bridge deals (bit-exact with Hans van Staveren's BigDeal 2.x).
//!
//! BigDeal turns two 160-bit seeds into an endless stream of "Gödel numbers", each naming
//! one of the `N = C(52,13) * C(39,13) * C(26,13)` bridge deals:
//!
//! ```text
//! seed_random = RIPEMD-160(entropy bytes)        -- main.c: collect_more(..) then collect_finish
//! seed_owner  = RIPEMD-160(owner bytes)          -- main.c: RMDhash(owner, strlen(owner))
//! for seq = 1, 2, 3, ...:
//!     h = RIPEMD-160( seq as 4 bytes little-endian || seed_random || seed_owner )
//!     g = h[0..12] read as a big-endian integer  -- memcpy into mp96, "lowest byte most significant"
//!     keep g when g < N                         -- goedel(): mp96_cmp(g, nr_bridge_deals) < 0
//! board k of the set is the k-th kept g
//! ```
//!
//! A number becomes a deal as in BigDeal's `binomial.c` (`code_to_hand`) and `output.c`
//! (`cnv_int_byh`): cards are numbered AS, KS, ..., 2S, AH, ..., 2C (our [`Deck::Bridge`]
//! indices 0..51, BigDeal's 1..52), and
//! `g = (rank_N * C(39,13) + rank_E) * C(26,13) + rank_S`, where `rank_X` is the
//! lexicographic rank of the ascending positions of hand X's cards among the cards not yet
//! given to an earlier hand; West gets the rest. So `g = 0` gives North the spades, East the
//! hearts, South the diamonds and West the clubs. (BigDeal's code walks the same
//! combinatorial number system with "skip" counts `d_j = p_j - j`; both forms are checked
//! against each other and against published tournament sets in the tests.)
//!
//! Arithmetic: `N < 2^96`, so every number and every partial sum fits a `u128`, and a
//! single hand's rank (`< C(52,13) < 2^40`) fits a `u64`. Plain machine integers avoid the
//! heap allocations of a big-integer type and make a deal a few hundred nanoseconds; only
//! the two divisions splitting `g` into the three ranks are 128-bit.
//!
//! [`Deck::Bridge`]: crate::deck::Deck::Bridge

use std::fmt;
use std::str::FromStr;

use ripemd::{Digest, Ripemd160};

/// The number of bridge deals, `C(52,13) * C(39,13) * C(26,13)`
/// (53,644,737,765,488,792,839,237,440,000; BigDeal's `nr_bridge_deals`).
pub const DEAL_COUNT: u128 = C52_13 as u128 * C39_13 as u128 * C26_13 as u128;

/// Cards in a hand.
pub const HAND_LEN: usize = 13;
/// Cards in the deck.
pub const DECK_LEN: usize = 52;

const C52_13: u64 = binomial(52, 13);
const C39_13: u64 = binomial(39, 13);
const C26_13: u64 = binomial(26, 13);

/// Length of a RIPEMD-160 digest.
pub const DIGEST_LEN: usize = 20;
/// Bytes of a digest read as a candidate deal number (96 bits).
pub const CANDIDATE_LEN: usize = 12;

/// The rank letters in suit order, ace first (BigDeal's `cardrep_int`).
const RANKS: &[u8; 13] = b"AKQJT98765432";

/// `C(n, k)` for `n <= 52`, `k <= 13`, computed at compile time by Pascal's rule (the same
/// table BigDeal precomputes in `binomial_start`).
const BINOMIALS: [[u64; HAND_LEN + 1]; DECK_LEN + 1] = {
    let mut table = [[0u64; HAND_LEN + 1]; DECK_LEN + 1];
    let mut n = 0;
    while n <= DECK_LEN {
        table[n][0] = 1;
        let mut k = 1;
        while k <= HAND_LEN && k <= n {
            table[n][k] = table[n - 1][k - 1] + table[n - 1][k];
            k += 1;
        }
        n += 1;
    }
    table
};

/// `C(n, k)` from the table, 0 outside it (`k > n`, or past 52 / 13).
#[inline]
const fn binomial(n: usize, k: usize) -> u64 {
    if n <= DECK_LEN && k <= HAND_LEN {
        BINOMIALS[n][k]
    } else {
        0
    }
}

/// RIPEMD-160 of `bytes`, as BigDeal's `RMDhash` (standard digest byte order).
pub fn ripemd160(bytes: &[u8]) -> [u8; DIGEST_LEN] {
    Ripemd160::digest(bytes).into()
}

/// A number that is not below [`DEAL_COUNT`], so names no deal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("deal number {0} is not below the number of bridge deals {DEAL_COUNT}")]
pub struct DealNumberOutOfRange(pub u128);

/// Why a decimal deal number could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DealNumberParseError {
    /// Not a non-empty string of decimal digits (commas between groups are allowed).
    #[error("deal number {0:?} is not a decimal number")]
    NotDecimal(String),
    /// A number, but too large.
    #[error(transparent)]
    OutOfRange(#[from] DealNumberOutOfRange),
}

/// A deal number `g`, always below [`DEAL_COUNT`] (BigDeal's "Gödel number").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DealNumber(u128);

impl DealNumber {
    /// The largest deal number, `N - 1`.
    pub const MAX: DealNumber = DealNumber(DEAL_COUNT - 1);
    /// The smallest deal number, 0 (North all spades, East hearts, South diamonds).
    pub const MIN: DealNumber = DealNumber(0);

    /// Checks that `g < N`.
    pub const fn new(g: u128) -> Result<Self, DealNumberOutOfRange> {
        if g < DEAL_COUNT {
            Ok(DealNumber(g))
        } else {
            Err(DealNumberOutOfRange(g))
        }
    }

    /// The number.
    pub const fn get(self) -> u128 {
        self.0
    }
}

impl fmt::Display for DealNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for DealNumber {
    type Err = DealNumberParseError;

    /// Reads a decimal number; commas (as in BigDeal's `.goe` files) and surrounding spaces
    /// are ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let not_decimal = || DealNumberParseError::NotDecimal(s.to_owned());
        let mut value: u128 = 0;
        let mut digits = 0usize;
        for c in s.trim().chars() {
            if c == ',' {
                continue;
            }
            let digit = c.to_digit(10).ok_or_else(not_decimal)?;
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u128::from(digit)))
                .ok_or(DealNumberOutOfRange(u128::MAX))?;
            digits += 1;
        }
        if digits == 0 {
            return Err(not_decimal());
        }
        Ok(DealNumber::new(value)?)
    }
}

/// The two 160-bit seeds of a BigDeal stream.
///
/// Both are derived from secrets (a SquareDeal session key, before the reveal), so `Debug`
/// does not print them.
#[derive(Clone, PartialEq, Eq)]
pub struct Seed {
    /// `RIPEMD-160(entropy)`: `seed_random` in BigDeal.
    random: [u8; DIGEST_LEN],
    /// `RIPEMD-160(owner)`: `seed_owner` in BigDeal (the `-W` wizard string or the owner
    /// identification of the init file).
    owner: [u8; DIGEST_LEN],
}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Seed").finish_non_exhaustive()
    }
}

impl Seed {
    /// The seed for `entropy` and `owner` bytes: what `bigdealx -W owner -e e1 -e e2 ...`
    /// computes with `entropy = e1 || e2 || ...` (the `-W` flag switches off every other
    /// entropy source, so the run is reproducible).
    pub fn new(entropy: &[u8], owner: &[u8]) -> Self {
        Seed {
            random: ripemd160(entropy),
            owner: ripemd160(owner),
        }
    }

    /// A seed from its two digests (`bigdealx -h` sets `seed_random` this way).
    pub const fn from_digests(random: [u8; DIGEST_LEN], owner: [u8; DIGEST_LEN]) -> Self {
        Seed { random, owner }
    }

    /// `seed_random`.
    pub const fn random_digest(&self) -> &[u8; DIGEST_LEN] {
        &self.random
    }

    /// `seed_owner`.
    pub const fn owner_digest(&self) -> &[u8; DIGEST_LEN] {
        &self.owner
    }

    /// The candidate number of step `seq`: the first 12 bytes of
    /// `RIPEMD-160(seq LE || seed_random || seed_owner)`, big-endian. It names a deal only
    /// when it is below [`DEAL_COUNT`].
    pub fn candidate(&self, seq: u32) -> u128 {
        // BigDeal hashes its `seed` struct: 4 + 20 + 20 = 44 bytes, one RIPEMD block.
        let mut message = [0u8; 4 + 2 * DIGEST_LEN];
        let (sequence, rest) = message.split_at_mut(4);
        let (random, owner) = rest.split_at_mut(DIGEST_LEN);
        sequence.copy_from_slice(&seq.to_le_bytes());
        random.copy_from_slice(&self.random);
        owner.copy_from_slice(&self.owner);
        let digest = ripemd160(&message);
        let mut wide = [0u8; 16];
        let (_, low) = wide.split_at_mut(16 - CANDIDATE_LEN);
        let (head, _) = digest.split_at(CANDIDATE_LEN);
        low.copy_from_slice(head);
        u128::from_be_bytes(wide)
    }

    /// The kept deal numbers, board 1 of the set first.
    pub fn deal_numbers(&self) -> DealNumbers {
        DealNumbers {
            seed: self.clone(),
            last_seq: 0,
        }
    }
}

/// The stream of kept deal numbers of a [`Seed`].
///
/// BigDeal's counter is 32 bits wide in the hash input; the stream ends after step
/// `u32::MAX` (some 2.9 billion boards, far beyond any real set) instead of wrapping.
#[derive(Clone)]
pub struct DealNumbers {
    /// The seed the numbers come from.
    seed: Seed,
    /// The last `seq` hashed (0 before the first step).
    last_seq: u32,
}

impl fmt::Debug for DealNumbers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DealNumbers")
            .field("last_seq", &self.last_seq)
            .finish_non_exhaustive()
    }
}

impl DealNumbers {
    /// The last sequence number hashed: after board k, the step that produced it.
    pub const fn last_seq(&self) -> u32 {
        self.last_seq
    }
}

impl Iterator for DealNumbers {
    type Item = DealNumber;

    fn next(&mut self) -> Option<DealNumber> {
        loop {
            self.last_seq = self.last_seq.checked_add(1)?;
            if let Ok(number) = DealNumber::new(self.seed.candidate(self.last_seq)) {
                return Some(number);
            }
        }
    }
}

/// A seat at the table, in dealing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seat {
    /// North (hand 0).
    North,
    /// East (hand 1).
    East,
    /// South (hand 2).
    South,
    /// West (hand 3).
    West,
}

impl Seat {
    /// All seats, North first (the order of a PBN `Deal` starting at North).
    pub const ALL: [Seat; 4] = [Seat::North, Seat::East, Seat::South, Seat::West];

    /// `N`, `E`, `S` or `W`.
    pub const fn letter(self) -> char {
        match self {
            Seat::North => 'N',
            Seat::East => 'E',
            Seat::South => 'S',
            Seat::West => 'W',
        }
    }

    /// The seat's hand index (N 0, E 1, S 2, W 3).
    pub const fn index(self) -> usize {
        match self {
            Seat::North => 0,
            Seat::East => 1,
            Seat::South => 2,
            Seat::West => 3,
        }
    }

    /// The seat from a letter `N`, `E`, `S`, `W` (either case).
    pub const fn from_letter(letter: char) -> Option<Seat> {
        match letter {
            'N' | 'n' => Some(Seat::North),
            'E' | 'e' => Some(Seat::East),
            'S' | 's' => Some(Seat::South),
            'W' | 'w' => Some(Seat::West),
            _ => None,
        }
    }

    /// The next seat clockwise.
    pub const fn next(self) -> Seat {
        match self {
            Seat::North => Seat::East,
            Seat::East => Seat::South,
            Seat::South => Seat::West,
            Seat::West => Seat::North,
        }
    }
}

/// The dealer of a board by the standard rotation: board 1 North, 2 East, 3 South, 4 West,
/// 5 North, ... (BigDeal's `dealerstr[boardno % 4]`).
pub const fn dealer(board: u32) -> Seat {
    match board % 4 {
        1 => Seat::North,
        2 => Seat::East,
        3 => Seat::South,
        _ => Seat::West,
    }
}

/// Which sides are vulnerable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vulnerability {
    /// Neither side.
    None,
    /// North-South.
    NorthSouth,
    /// East-West.
    EastWest,
    /// Both sides.
    Both,
}

impl Vulnerability {
    /// The PBN `Vulnerable` value: `None`, `NS`, `EW`, `All`.
    pub const fn pbn(self) -> &'static str {
        match self {
            Vulnerability::None => "None",
            Vulnerability::NorthSouth => "NS",
            Vulnerability::EastWest => "EW",
            Vulnerability::Both => "All",
        }
    }

    /// The LIN `sv` value: `0`, `n`, `e`, `b`.
    pub const fn lin(self) -> &'static str {
        match self {
            Vulnerability::None => "0",
            Vulnerability::NorthSouth => "n",
            Vulnerability::EastWest => "e",
            Vulnerability::Both => "b",
        }
    }
}

/// The vulnerability of a board by the standard 16-board cycle (BigDeal's `vuln_index`).
pub const fn vulnerability(board: u32) -> Vulnerability {
    const CYCLE: [Vulnerability; 16] = {
        use Vulnerability::{Both as B, EastWest as E, None as O, NorthSouth as N};
        // Boards 16, 1, 2, ..., 15 (index = board % 16).
        [E, O, N, E, B, N, E, B, O, E, B, O, N, B, O, N]
    };
    CYCLE[(board % 16) as usize]
}

/// Why four hands are not a bridge deal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDeal {
    /// A card index past 51.
    #[error("card index {0} is not a bridge card (0..=51)")]
    NoSuchCard(u8),
    /// A card held twice.
    #[error("card {0} is dealt twice")]
    Duplicate(&'static str),
}

/// A bridge deal: four hands of 13 cards, each sorted by card index (AS first, 2C last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BridgeDeal {
    /// Hands N, E, S, W; card indices in [`Deck::Bridge`](crate::deck::Deck::Bridge) order,
    /// ascending.
    hands: [[u8; HAND_LEN]; 4],
}

impl BridgeDeal {
    /// A deal from four hands of card indices (any order within a hand).
    pub fn from_hands(mut hands: [[u8; HAND_LEN]; 4]) -> Result<Self, InvalidDeal> {
        let mut seen = [false; DECK_LEN];
        for hand in &mut hands {
            for &card in hand.iter() {
                let slot = seen
                    .get_mut(usize::from(card))
                    .ok_or(InvalidDeal::NoSuchCard(card))?;
                if *slot {
                    return Err(InvalidDeal::Duplicate(card_code(card)));
                }
                *slot = true;
            }
            hand.sort_unstable();
        }
        // 52 distinct cards in range: every card is dealt exactly once.
        Ok(BridgeDeal { hands })
    }

    /// The deal a number names (BigDeal's `code_to_hand` and `cnv_int_byh`).
    pub fn from_number(number: DealNumber) -> Self {
        let g = number.get();
        let south = (g % u128::from(C26_13)) as u64;
        let rest = g / u128::from(C26_13);
        let east = (rest % u128::from(C39_13)) as u64;
        // g < N, so rest / C(39,13) < C(52,13) < 2^40.
        let north = (rest / u128::from(C39_13)) as u64;

        let mut remaining = [0u8; DECK_LEN];
        for (slot, card) in remaining.iter_mut().zip(0u8..) {
            *slot = card;
        }
        let mut remaining_len = DECK_LEN;
        let mut hands = [[0u8; HAND_LEN]; 4];
        for (hand, rank) in hands.iter_mut().zip([north, east, south]) {
            remaining_len = take_hand(&mut remaining, remaining_len, rank, hand);
        }
        // West: the 13 cards left, still ascending.
        if let (Some(west), Some(rest)) = (hands.get_mut(3), remaining.get(..HAND_LEN)) {
            west.copy_from_slice(rest);
        }
        BridgeDeal { hands }
    }

    /// The number of this deal (the inverse of [`BridgeDeal::from_number`]).
    pub fn number(&self) -> DealNumber {
        let mut seat_of = [3u8; DECK_LEN];
        for (seat, hand) in (0u8..).zip(&self.hands) {
            for &card in hand {
                if let Some(slot) = seat_of.get_mut(usize::from(card)) {
                    *slot = seat;
                }
            }
        }
        // Walk the remaining cards for N, E, S in turn; each hand's rank is the sum, over
        // the cards it skips, of the subsets that would have taken that card instead.
        let mut ranks = [0u64; 3];
        for (seat, rank) in (0u8..).zip(ranks.iter_mut()) {
            let remaining = seat_of.iter().filter(|&&s| s >= seat);
            let m = DECK_LEN - usize::from(seat) * HAND_LEN;
            let mut to_choose = HAND_LEN;
            for (position, &owner) in remaining.enumerate() {
                if to_choose == 0 {
                    break;
                }
                if owner == seat {
                    to_choose -= 1;
                } else {
                    *rank += binomial(m - 1 - position, to_choose - 1);
                }
            }
        }
        let [north, east, south] = ranks;
        let g = (u128::from(north) * u128::from(C39_13) + u128::from(east)) * u128::from(C26_13)
            + u128::from(south);
        // Valid hands give ranks below their binomials, hence g < N.
        DealNumber::new(g).unwrap_or(DealNumber::MAX)
    }

    /// The hand of `seat`, ascending card indices.
    pub const fn hand(&self, seat: Seat) -> &[u8; HAND_LEN] {
        &self.hands[seat.index()]
    }

    /// The four hands, N E S W.
    pub const fn hands(&self) -> &[[u8; HAND_LEN]; 4] {
        &self.hands
    }

    /// The seat holding a card index (`None` for an index past 51).
    pub fn holder(&self, card: u8) -> Option<Seat> {
        Seat::ALL
            .into_iter()
            .find(|seat| self.hand(*seat).contains(&card))
    }

    /// Appends one hand as `spades.hearts.diamonds.clubs`, ranks `AKQJT98765432`
    /// (BigDeal's `out_handrep` with PBN separators).
    pub fn write_hand(&self, seat: Seat, separator: &str, out: &mut String) {
        let hand = self.hand(seat);
        for suit in 0..4u8 {
            if suit > 0 {
                out.push_str(separator);
            }
            for &card in hand.iter().filter(|&&c| c / 13 == suit) {
                if let Some(&rank) = RANKS.get(usize::from(card % 13)) {
                    out.push(char::from(rank));
                }
            }
        }
    }

    /// The PBN `Deal` value: `N:` and the hands N E S W separated by spaces.
    pub fn pbn(&self) -> String {
        let mut out = String::with_capacity(2 + DECK_LEN + 4 * 3 + 3);
        out.push_str("N:");
        for (i, seat) in Seat::ALL.into_iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            self.write_hand(seat, ".", &mut out);
        }
        out
    }
}

/// Why a PBN `Deal` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PbnDealError {
    /// Not `<seat>:` followed by four hands.
    #[error("deal {0:?} is not \"<N|E|S|W>:\" and four hands")]
    Shape(String),
    /// A hand is not four suits separated by dots, or holds a letter that is no rank.
    #[error("hand {0:?} is not spades.hearts.diamonds.clubs with ranks AKQJT98765432")]
    Hand(String),
    /// A hand does not hold 13 cards.
    #[error("hand {hand:?} holds {cards} cards, not 13")]
    HandLength {
        /// The hand as written.
        hand: String,
        /// How many cards it holds.
        cards: usize,
    },
    /// The hands are not a deal (a card twice).
    #[error(transparent)]
    Invalid(#[from] InvalidDeal),
}

impl BridgeDeal {
    /// Reads a PBN `Deal` value such as `N:AJ65.K82.AK8.J75 8.AQT75.QJT4.Q64 ...`: the
    /// first seat, then four hands clockwise from it.
    pub fn from_pbn(value: &str) -> Result<Self, PbnDealError> {
        let shape = || PbnDealError::Shape(value.to_owned());
        let (first, hands_text) = value.trim().split_once(':').ok_or_else(shape)?;
        let mut chars = first.chars();
        let mut seat = match (chars.next().and_then(Seat::from_letter), chars.next()) {
            (Some(seat), None) => seat,
            _ => return Err(shape()),
        };
        let texts: Vec<&str> = hands_text.split_whitespace().collect();
        if texts.len() != 4 {
            return Err(shape());
        }
        let mut hands = [[0u8; HAND_LEN]; 4];
        for text in texts {
            let hand_error = || PbnDealError::Hand(text.to_owned());
            let suits: Vec<&str> = text.split('.').collect();
            if suits.len() != 4 {
                return Err(hand_error());
            }
            let mut cards = Vec::with_capacity(HAND_LEN);
            for (suit, ranks) in (0u8..).zip(suits) {
                for rank in ranks.bytes() {
                    let position = RANKS
                        .iter()
                        .position(|&r| r == rank.to_ascii_uppercase())
                        .ok_or_else(hand_error)?;
                    cards.push(suit * 13 + position as u8);
                }
            }
            let hand: [u8; HAND_LEN] =
                cards
                    .as_slice()
                    .try_into()
                    .map_err(|_| PbnDealError::HandLength {
                        hand: text.to_owned(),
                        cards: cards.len(),
                    })?;
            if let Some(slot) = hands.get_mut(seat.index()) {
                *slot = hand;
            }
            seat = seat.next();
        }
        Ok(BridgeDeal::from_hands(hands)?)
    }
}

/// One board of a set: its number (which fixes dealer and vulnerability) and its deal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Board {
    /// The board number printed on the board.
    pub number: u32,
    /// The deal number `g` it was dealt from.
    pub deal_number: DealNumber,
    /// The deal.
    pub deal: BridgeDeal,
}

impl Board {
    /// The board dealt from `deal_number`.
    pub fn new(number: u32, deal_number: DealNumber) -> Self {
        Board {
            number,
            deal_number,
            deal: BridgeDeal::from_number(deal_number),
        }
    }

    /// The dealer by the standard rotation.
    pub const fn dealer(&self) -> Seat {
        dealer(self.number)
    }

    /// The vulnerability by the standard rotation.
    pub const fn vulnerability(&self) -> Vulnerability {
        vulnerability(self.number)
    }

    /// Appends the board as BigDeal's `print_pbn` writes it (same tags, same order, `?` for
    /// the tags a deal set cannot know), with `event` as the `Event` value (BigDeal writes
    /// `?`; an empty `event` gives `?` too).
    pub fn write_pbn(&self, event: &str, out: &mut String) {
        use std::fmt::Write as _;
        let unknown = |out: &mut String, tag: &str| {
            let _ = writeln!(out, "[{tag} \"?\"]");
        };
        if event.is_empty() {
            unknown(out, "Event");
        } else {
            let _ = writeln!(out, "[Event \"{}\"]", pbn_escape(event));
        }
        unknown(out, "Site");
        unknown(out, "Date");
        let _ = writeln!(out, "[Board \"{}\"]", self.number);
        for tag in ["West", "North", "East", "South"] {
            unknown(out, tag);
        }
        let _ = writeln!(out, "[Dealer \"{}\"]", self.dealer().letter());
        let _ = writeln!(out, "[Vulnerable \"{}\"]", self.vulnerability().pbn());
        let _ = writeln!(out, "[Deal \"{}\"]", self.deal.pbn());
        for tag in ["Scoring", "Declarer", "Contract", "Result"] {
            unknown(out, tag);
        }
        out.push('\n');
    }

    /// Appends the board as BigDeal's `print_lin` writes it (BBO's LIN: hands South, West,
    /// North; East is implied).
    pub fn write_lin(&self, out: &mut String) {
        use std::fmt::Write as _;
        // LIN numbers the dealer 1 = South, 2 = West, 3 = North, 4 = East.
        let dealer = (self.number.wrapping_add(1)) % 4 + 1;
        let _ = write!(out, "qx|o{}|md|{}", self.number, dealer);
        for (i, seat) in [Seat::South, Seat::West, Seat::North]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                out.push(',');
            }
            for (suit, letter) in ['S', 'H', 'D', 'C'].into_iter().enumerate() {
                out.push(letter);
                let hand = self.deal.hand(seat);
                for &card in hand.iter().filter(|&&c| usize::from(c / 13) == suit) {
                    if let Some(&rank) = RANKS.get(usize::from(card % 13)) {
                        out.push(char::from(rank));
                    }
                }
            }
        }
        let _ = writeln!(
            out,
            "|rh||ah|Board {}|sv|{}|pg||",
            self.number,
            self.vulnerability().lin()
        );
    }
}

/// The boards of a set: the first `count` kept numbers of `seed`, numbered from
/// `first_board` on (BigDeal's `-n first-last`). Shorter only if the stream ends, which
/// takes billions of boards.
pub fn boards(seed: &Seed, first_board: u32, count: u32) -> Vec<Board> {
    seed.deal_numbers()
        .zip(0..count)
        .map_while(|(number, i)| Some(Board::new(first_board.checked_add(i)?, number)))
        .collect()
}

/// The PBN file header BigDeal writes (`init_pbn`), with our own `Generator` value.
pub fn pbn_header(generator: &str) -> String {
    format!(
        "% PBN 2.1\n% EXPORT\n%\n[Generator \"{}\"]\n",
        pbn_escape(generator)
    )
}

/// Escapes a PBN tag value: a backslash and a double quote are preceded by a backslash.
pub fn pbn_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            // A tag value is one line.
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// Chooses the hand of lexicographic rank `rank` among the first `len` cards of
/// `remaining`, writes it to `hand` and compacts the rest to the front. Returns the new
/// length.
fn take_hand(
    remaining: &mut [u8; DECK_LEN],
    len: usize,
    mut rank: u64,
    hand: &mut [u8; HAND_LEN],
) -> usize {
    let mut to_choose = HAND_LEN;
    let mut kept = 0usize;
    let mut taken = 0usize;
    for position in 0..len.min(DECK_LEN) {
        let card = remaining.get(position).copied().unwrap_or(0);
        let choose = if to_choose == 0 {
            false
        } else {
            // Subsets that leave this card out while the earlier choices stand.
            let without = binomial(len - 1 - position, to_choose - 1);
            if rank < without {
                true
            } else {
                rank -= without;
                false
            }
        };
        if choose {
            if let Some(slot) = hand.get_mut(taken) {
                *slot = card;
            }
            taken += 1;
            to_choose -= 1;
        } else {
            if let Some(slot) = remaining.get_mut(kept) {
                *slot = card;
            }
            kept += 1;
        }
    }
    kept
}

/// The code (`AS`, `TH`, ...) of a bridge card index, `"??"` past 51.
pub fn card_code(card: u8) -> &'static str {
    crate::deck::Deck::Bridge.code(card).unwrap_or("??")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deal_count_is_bigdeals_constant() {
        assert_eq!(DEAL_COUNT, 53_644_737_765_488_792_839_237_440_000);
        // main.c: nr_bridge_deals = {173,85,227,21,99,77,218,101,139,244,146,0}, big-endian.
        let bytes = [173u8, 85, 227, 21, 99, 77, 218, 101, 139, 244, 146, 0];
        let from_c = bytes
            .iter()
            .fold(0u128, |acc, &b| (acc << 8) | u128::from(b));
        assert_eq!(DEAL_COUNT, from_c);
        const { assert!(DEAL_COUNT < 1u128 << 96) };
    }

    #[test]
    fn binomials_match_known_values() {
        assert_eq!(C52_13, 635_013_559_600);
        assert_eq!(C39_13, 8_122_425_444);
        assert_eq!(C26_13, 10_400_600);
        assert_eq!(binomial(13, 13), 1);
        assert_eq!(binomial(5, 13), 0);
    }

    #[test]
    fn ripemd160_matches_the_reference_vectors() {
        // From the RIPEMD-160 paper (Dobbertin, Bosselaers, Preneel).
        assert_eq!(
            hex::encode(ripemd160(b"")),
            "9c1185a5c5e9fc54612808977ee8f548b2258d31"
        );
        assert_eq!(
            hex::encode(ripemd160(b"abc")),
            "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc"
        );
    }

    #[test]
    fn rotation_follows_the_standard_cycle() {
        let dealers: String = (1..=4).map(|b| dealer(b).letter()).collect();
        assert_eq!(dealers, "NESW");
        let vul: Vec<&str> = (1..=16).map(|b| vulnerability(b).pbn()).collect();
        assert_eq!(
            vul,
            [
                "None", "NS", "EW", "All", "NS", "EW", "All", "None", "EW", "All", "None", "NS",
                "All", "None", "NS", "EW"
            ]
        );
        assert_eq!(vulnerability(17), Vulnerability::None);
        assert_eq!(dealer(17), Seat::North);
    }

    #[test]
    fn deal_number_parses_goe_style_decimals() {
        let n: DealNumber = " 6,904,023,658,446,448,646,504,663,492".parse().unwrap();
        assert_eq!(n.get(), 6_904_023_658_446_448_646_504_663_492);
        assert!("".parse::<DealNumber>().is_err());
        assert!("12a".parse::<DealNumber>().is_err());
        assert!(DEAL_COUNT.to_string().parse::<DealNumber>().is_err());
        assert!("9".repeat(60).parse::<DealNumber>().is_err());
    }

    #[test]
    fn from_hands_rejects_bad_cards() {
        let mut hands = BridgeDeal::from_number(DealNumber::MIN).hands;
        hands[1][0] = hands[0][0];
        assert_eq!(
            BridgeDeal::from_hands(hands),
            Err(InvalidDeal::Duplicate("AS"))
        );
        hands[1][0] = 52;
        assert_eq!(
            BridgeDeal::from_hands(hands),
            Err(InvalidDeal::NoSuchCard(52))
        );
    }

    #[test]
    fn seed_debug_hides_the_digests() {
        let seed = Seed::new(b"secret entropy", b"owner");
        let shown = format!("{seed:?} {:?}", seed.deal_numbers());
        assert!(!shown.contains(&hex::encode(seed.random_digest())));
        assert!(!shown.contains(&format!("{:?}", seed.random_digest()[0..4].to_vec())));
    }
}
