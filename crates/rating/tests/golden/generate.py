#!/usr/bin/env python3
"""Golden vectors for fairdeal's ratings (SPEC 6, in the crate's documented evaluation order).

An independent implementation, written from the evaluation order in the crate docs of
`crates/rating` (and docs/decisions.md) using nothing but the Python standard library. Python
floats are IEEE 754 doubles and every operation below is one rounded double operation, so this
must give the Rust crate's bits exactly; `tests/golden.rs` checks that it does.

Regenerate (the output is deterministic):

    python3 crates/rating/tests/golden/generate.py > crates/rating/tests/golden/changes.jsonl

Each line is one JSON object; every double is a string holding its shortest round-trip decimal
form (Python's repr), so no JSON reader can round it:
  "player", "opponents" (list), "score", "k", and either
  "expectation", "after", "weights" (list, in the order of "opponents"), or
  "refused": "gap" when an opponent is more than 999 points away.
"""

import json
import math

MAX_GAP = 999.0

# pow10: the constants of the crate docs.
LOG2_10 = 3.321928094887362
LOG10_2_HI = 0.3010299956658855
LOG10_2_LO = -1.9043128467164274e-12
TAYLOR = [  # ln(10)^i / i!, i = 0..13
    1.0, 2.302585092994046, 2.650949055239199, 2.034678592293476, 1.171255148912267,
    0.5393829291955814, 0.2069958486968681, 0.06808936507443707, 0.019597694626478524,
    0.00501392883377544, 0.0011544997789984348, 0.00024166672554424694,
    4.6371516642572196e-05, 8.213412535439387e-06,
]


def pow10(y):
    k = math.floor(y * LOG2_10 + 0.5)
    r = (y - k * LOG10_2_HI) - k * LOG10_2_LO
    p = TAYLOR[13]
    for c in reversed(TAYLOR[:13]):
        p = p * r + c
    return math.ldexp(p, k)


def weight(e, several):
    return 1.0 - e / 1000.0 if several and abs(e) >= 100.0 else 1.0


def rate(player, opponents, score, k):
    """(expectation, after, weights) or None when the game cannot be rated."""
    several = len(opponents) > 1
    total = 0.0
    for m in sorted(opponents):
        e = player - m
        if abs(e) > MAX_GAP:
            return None
        total = total + pow10(-e / 400.0) * weight(e, several)
    expectation = 1.0 / (1.0 + total / len(opponents))
    after = player + k * (score - expectation)
    weights = [weight(player - m, several) for m in opponents]
    return expectation, after, weights


class XorShift:
    """xorshift64*: a fixed stream of test inputs, the same in every Python version."""

    def __init__(self, seed):
        self.state = seed

    def next(self):
        x = self.state
        x ^= x >> 12
        x ^= (x << 25) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 27
        self.state = x
        return (x * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF

    def uniform(self, low, high):
        return low + (high - low) * ((self.next() >> 11) / float(1 << 53))

    def below(self, n):
        return self.next() % n


def cases():
    # Worked examples and the edges of the weight and of the gap limit.
    yield 1500.0, [1500.0], 1.0, 32.0
    yield 1500.0, [1500.0, 1500.0], 0.0, 32.0
    yield 1600.0, [1400.0], 1.0, 32.0
    yield 1400.0, [1600.0], 1.0, 32.0
    yield 1600.0, [1400.0, 1400.0], 1.0, 32.0
    yield 1500.0, [1401.0, 1400.0, 1600.0, 1650.0], 1.0, 32.0
    yield 1500.0, [1401.0, 1400.0, 1600.0, 1650.0], 0.5, 32.0
    for gap in [99.0, 99.99999999999999, 100.0, 100.00000000000001, 998.5, 999.0, 999.0000000000001]:
        for sign in [1.0, -1.0]:
            for j in [1, 2, 3]:
                yield 1500.0, [1500.0 - sign * gap] * j, 1.0, 32.0
    yield 0.0, [-999.0], 0.0, 32.0
    yield -250.75, [-100.5, 300.25], 0.5, 16.0
    yield 1e12, [1e12 + 0.5, 1e12 - 200.0], 1.0, 32.0
    yield 1500.0, [1500.0], 1.0, 1e300
    # A fixed pseudo-random spread over the ratings, K and game sizes a platform sees.
    rng = XorShift(0x5EED_2026_0006_0001)
    for _ in range(400):
        player = rng.uniform(-500.0, 3500.0)
        j = 1 + rng.below(5)
        opponents = [player + rng.uniform(-1050.0, 1050.0) for _ in range(j)]
        score = [0.0, 0.5, 1.0][rng.below(3)]
        k = [32.0, 16.0, 24.5, rng.uniform(0.5, 64.0)][rng.below(4)]
        yield player, opponents, score, k


def main():
    for player, opponents, score, k in cases():
        line = {
            "player": repr(player),
            "opponents": [repr(m) for m in opponents],
            "score": repr(score),
            "k": repr(k),
        }
        rated = rate(player, opponents, score, k)
        if rated is None:
            line["refused"] = "gap"
        else:
            expectation, after, weights = rated
            line["expectation"] = repr(expectation)
            line["after"] = repr(after)
            line["weights"] = [repr(w) for w in weights]
        print(json.dumps(line, separators=(",", ":")))


if __name__ == "__main__":
    main()
