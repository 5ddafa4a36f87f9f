//! Human-readable walk-throughs of a computation, as a verification page shows them.
//!
//! A computation reads its numbers through a [`Recorder`]; afterwards [`Explanation`]
//! writes the key, every cursor's bytes and numbers, and the steps the caller adds (each
//! pick with the list it picked from). Everything here is pure text building.

use std::fmt::Write as _;

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
    fn pick_line_names_the_choice() {
        let mut e = Explanation::new();
        e.pick(0, u64::MAX, &["AS", "KS", "QS"]);
        assert!(e.finish().contains("= 2 -> QS"), "{}", e.finish());
    }
}
