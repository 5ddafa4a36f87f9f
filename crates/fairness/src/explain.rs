//! Human-readable walk-throughs of a computation, as a verification page shows them.
//!
//! A computation reads its numbers through a [`Recorder`]; afterwards [`Explanation`]
//! writes the key, every cursor's bytes and numbers, and the steps the caller adds (each
//! pick with the list it picked from). [`Explanation::shuffle`], [`Explanation::picks`] and
//! [`Explanation::deal`] write the steps of a deal. Everything here is pure text building.

use std::fmt::Write as _;

use crate::deal::Deal;
use crate::deck::Deck;
use crate::generator::{Exhausted, NumberSource, pick};

/// A [`NumberSource`] that remembers every number read through it.
#[derive(Debug)]
pub struct Recorder<'a, S: NumberSource + ?Sized> {
    inner: &'a mut S,
    /// Numbers read so far, in order.
    pub read: Vec<u64>,
}

impl<'a, S: NumberSource + ?Sized> Recorder<'a, S> {
    /// Starts recording the numbers read from `inner`.
    pub fn new(inner: &'a mut S) -> Self {
        Recorder {
            inner,
            read: Vec::new(),
        }
    }
}

impl<S: NumberSource + ?Sized> NumberSource for Recorder<'_, S> {
    fn next_number(&mut self) -> Result<u64, Exhausted> {
        let n = self.inner.next_number()?;
        self.read.push(n);
        Ok(n)
    }
}

/// A walk-through being written, line by line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Explanation {
    text: String,
}

impl Explanation {
    /// An empty explanation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one line.
    pub fn line(&mut self, line: impl AsRef<str>) -> &mut Self {
        self.text.push_str(line.as_ref());
        self.text.push('\n');
        self
    }

    /// Describes the inputs and the HMAC key of a seeded generator.
    pub fn seeds(
        &mut self,
        server_seed: &str,
        client_seed: &str,
        salt: &str,
        key: &[u8; 32],
    ) -> &mut Self {
        self.line(format!("server seed : {server_seed}"))
            .line(format!("client seed : {client_seed}"))
            .line(format!("salt        : {salt}"))
            .line(format!(
                "key = SHA-256(server_seed \":\" salt) = {}",
                hex::encode(key)
            ))
    }

    /// Lists the numbers read, grouped by cursor (8 numbers per 64-byte block), with the
    /// block bytes and each number as `U` (hex) and `u = U / 2^64`.
    ///
    /// `client_seed` is `None` for raw bytes supplied by the verifier.
    pub fn numbers(&mut self, client_seed: Option<&str>, numbers: &[u64]) -> &mut Self {
        for (cursor, block) in numbers.chunks(8).enumerate() {
            let bytes: String = block.iter().map(|n| format!("{n:016x}")).collect();
            match client_seed {
                Some(c) => self.line(format!(
                    "cursor {cursor}: HMAC-SHA512(key, \"{c}:{cursor}\") = {bytes}"
                )),
                None => self.line(format!("cursor {cursor}: bytes {bytes}")),
            };
            for (j, n) in block.iter().enumerate() {
                self.line(format!(
                    "  U[{}] = 0x{n:016x} = {n} (u = {:.12})",
                    cursor * 8 + j,
                    *n as f64 / 18_446_744_073_709_551_616.0
                ));
            }
        }
        self
    }

    /// Describes one pick: `floor(u * n)` and, when given, the item chosen from the list.
    pub fn pick(&mut self, step: usize, number: u64, remaining: &[&str]) -> &mut Self {
        let n = remaining.len() as u64;
        let i = pick(number, n);
        let chosen = remaining.get(i as usize).copied().unwrap_or("?");
        let mut line = String::new();
        let _ = write!(
            line,
            "step {step}: floor(U[{step}] * {n}) = {i} -> {chosen}   from [{}]",
            remaining.join(" ")
        );
        self.line(line)
    }

    /// Walks the shuffle of `codes` (canonical order) with `numbers`: one line per pick with
    /// the list it picked from, then the last card. Numbers beyond the `n - 1` a shuffle
    /// reads are ignored; missing numbers end the walk early with a note.
    pub fn shuffle(&mut self, codes: &[&str], numbers: &[u64]) -> &mut Self {
        let mut remaining: Vec<&str> = codes.to_vec();
        self.line(format!(
            "shuffle: {} picks, index = floor(U * remaining) = (U * remaining) >> 64; the card \
             leaves the list for the end of the dealt order",
            codes.len().saturating_sub(1)
        ));
        let mut step = 0;
        while remaining.len() > 1 {
            let Some(&number) = numbers.get(step) else {
                self.line(format!("(no number U[{step}]: the walk stops here)"));
                return self;
            };
            self.pick(step, number, &remaining);
            let i = pick(number, remaining.len() as u64) as usize;
            // `pick` is below the list length.
            if i < remaining.len() {
                remaining.remove(i);
            }
            step += 1;
        }
        if let Some(last) = remaining.first() {
            self.line(format!("step {step}: the last card -> {last}"));
        }
        if numbers.len() > step {
            self.line(format!(
                "(numbers U[{step}] and after are not used by the shuffle)"
            ));
        }
        self
    }

    /// Walks a shuffle given by its picks `i_k` (for a deal rebuilt from its distribution
    /// number): one line per pick with the list it picked from.
    pub fn picks(&mut self, codes: &[&str], indices: &[u8]) -> &mut Self {
        let mut remaining: Vec<&str> = codes.to_vec();
        for (step, &i) in indices.iter().enumerate() {
            let i = usize::from(i);
            if i >= remaining.len() {
                self.line(format!(
                    "step {step}: pick {i} is outside the {} remaining cards",
                    remaining.len()
                ));
                return self;
            }
            let list = remaining.join(" ");
            let card = remaining.remove(i);
            self.line(format!("step {step}: i = {i} -> {card}   from [{list}]"));
        }
        self
    }

    /// The digits of a distribution number: `N = sum i_k * (n - 1 - k)!`, from the most
    /// significant, and the number itself.
    pub fn distribution_number(&mut self, deal: &Deal) -> &mut Self {
        let n = deal.indices.len();
        let terms: Vec<String> = deal
            .indices
            .iter()
            .enumerate()
            .map(|(k, i)| format!("{i}*{}!", n - 1 - k))
            .collect();
        self.line(format!(
            "distribution number N = sum i_k * (n-1-k)! = {}",
            terms.join(" + ")
        ))
        .line(format!("  N = {}", deal.distribution_number()))
    }

    /// The hands (hand 0 first: the dealer's left) and the chien of a deal.
    pub fn deal(&mut self, deal: &Deal) -> &mut Self {
        let codes = |cards: &[u8]| deal.codes(cards).join(" ");
        self.line(format!("dealt order: {}", codes(&deal.order)));
        if deal.deck.is_tarot() {
            self.line(format!(
                "dealing: packets of 3 from hand 0; after each packet but the first, one card \
                 to the chien until it holds {}",
                deal.deck.chien_len()
            ));
        } else {
            self.line("dealing: one card at a time, card k to hand k mod 4");
        }
        for (h, hand) in deal.hands.iter().enumerate() {
            let seat = match (deal.deck, h) {
                (Deck::Bridge, 0) => " (N)",
                (Deck::Bridge, 1) => " (E)",
                (Deck::Bridge, 2) => " (S)",
                (Deck::Bridge, 3) => " (W)",
                _ => "",
            };
            self.line(format!("hand {h}{seat}: {}", codes(hand)));
        }
        if deal.deck.is_tarot() {
            self.line(format!("chien: {}", codes(&deal.chien)));
        }
        self
    }

    /// The finished text.
    pub fn finish(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::Generator;

    #[test]
    fn records_what_was_read() {
        let g = Generator::new("s", "c", "0");
        let mut numbers = g.numbers();
        let mut rec = Recorder::new(&mut numbers);
        let a = rec.next_number().unwrap();
        let b = rec.next_number().unwrap();
        assert_eq!(rec.read, vec![a, b]);
    }

    #[test]
    fn deal_walkthrough_has_every_step() {
        let g = Generator::new("s", "c", "0");
        let numbers: Vec<u64> = g.numbers().take(40).collect();
        let deal = Deal::from_seeds(Deck::Dix, "s", "c", "0");
        let codes = Deck::Dix.codes();
        let mut e = Explanation::new();
        e.shuffle(codes, &numbers)
            .deal(&deal)
            .distribution_number(&deal);
        let text = e.finish();
        assert_eq!(text.matches("\nstep ").count(), 40, "{text}");
        assert!(text.contains("step 39: the last card"));
        assert!(text.contains("U[39] and after are not used"));
        let first = deal.codes(&deal.order[..1])[0];
        assert!(text.contains(&format!(
            "step 0: floor(U[0] * 40) = {} -> {first}",
            deal.indices[0]
        )));
        assert!(text.contains(&format!("hand 3: {}", deal.codes(&deal.hands[3]).join(" "))));
        assert!(text.contains(&format!("N = {}", deal.distribution_number())));

        // The same walk from the picks alone.
        let mut e = Explanation::new();
        e.picks(codes, &deal.indices);
        assert_eq!(e.finish().lines().count(), 40);
        assert!(
            e.finish()
                .starts_with(&format!("step 0: i = {} -> {first}", deal.indices[0]))
        );
    }

    #[test]
    fn short_inputs_do_not_panic() {
        let mut e = Explanation::new();
        e.shuffle(Deck::Dix.codes(), &[1, 2])
            .picks(&["AS", "KS"], &[5]);
        assert!(e.finish().contains("no number U[2]"));
        assert!(e.finish().contains("outside the 2 remaining"));
    }

    #[test]
    fn pick_line_names_the_choice() {
        let mut e = Explanation::new();
        e.pick(0, u64::MAX, &["AS", "KS", "QS"]);
        assert!(e.finish().contains("= 2 -> QS"), "{}", e.finish());
    }
}
