#!/usr/bin/env python3
"""Golden vectors for fairdeal's single-round games (SPEC sections 1 and 3).

An independent implementation, written from the SPEC text only, using nothing but the Python
standard library (hashlib, hmac, fractions). The Rust test `tests/golden_outcomes.rs`
compares every vector with `fairdeal_fairness::outcome`.

Regenerate (the output is deterministic):

    python3 crates/fairness/tests/golden/generate_outcomes.py \
        > crates/fairness/tests/golden/outcomes.jsonl

Each line is one JSON object:
  {"server_seed", "client_seed", "salt"}  or  {"bytes": hex of raw cursor blocks},
  "game", "options" (mines / tickets / pins / spins, only those given),
  "expected": {"game": ..., "result": ...}  (the JSON form documented in outcome/mod.rs).
"""

import hashlib
import hmac
import json
import math
from fractions import Fraction

TWO64 = 1 << 64


# --- SPEC section 1 ---------------------------------------------------------------------

def cursor_block(server_seed, client_seed, salt, cursor):
    key = hashlib.sha256(f"{server_seed}:{salt}".encode("utf-8")).digest()
    return hmac.new(key, f"{client_seed}:{cursor}".encode("utf-8"), hashlib.sha512).digest()


def numbers_from_bytes(data):
    """Every big-endian 8-byte number of the raw bytes, in order."""
    return [int.from_bytes(data[i:i + 8], "big") for i in range(0, len(data), 8)]


def seeded_numbers(server_seed, client_seed, salt, count):
    """The first `count` numbers: cursors 0, 1, ... concatenated."""
    data = b""
    cursor = 0
    while len(data) < count * 8:
        data += cursor_block(server_seed, client_seed, salt, cursor)
        cursor += 1
    return numbers_from_bytes(data)[:count]


def index(u, n):
    """floor(u * n) with u = U / 2^64, exactly (a Fraction, then floor)."""
    return math.floor(Fraction(u, TWO64) * n)


def two_places(value):
    """A non-negative Fraction already a multiple of 1/100, written with two decimals."""
    cents = value * 100
    assert cents.denominator == 1
    cents = int(cents)
    return f"{cents // 100}.{cents % 100:02d}"


# --- SPEC section 3 ---------------------------------------------------------------------

def numbers_needed(game, options):
    if game in ("dice", "double", "x50", "jackpot", "crash", "overgo"):
        return 1
    if game == "mines":
        return 24
    if game == "tower":
        return 40
    if game == "slot":
        return 8 * options["spins"]
    if game == "plinko":
        return options["pins"]
    raise ValueError(game)


def play(game, options, u):
    """The result of `game` from the numbers `u` (list of ints in [0, 2^64))."""
    if game == "dice":
        return two_places(Fraction(index(u[0], 10001), 100))
    if game == "double":
        return index(u[0], 15)
    if game == "x50":
        return index(u[0], 54)
    if game == "jackpot":
        return index(u[0], options["tickets"]) + 1
    if game in ("crash", "overgo"):
        numerator = 950000 if game == "crash" else 970000
        h = index(u[0], 10 ** 6)
        value = max(Fraction(1), Fraction(numerator, h + 1))
        # Round half up to 2 decimals: floor(100 x + 1/2) / 100.
        return two_places(Fraction(math.floor(value * 100 + Fraction(1, 2)), 100))
    if game == "mines":
        remaining = list(range(25))
        order = []
        for k in range(24):
            order.append(remaining.pop(index(u[k], len(remaining))))
        order.append(remaining.pop())
        return order[:options["mines"]]
    if game == "tower":
        rows = []
        for r in range(10):
            remaining = [0, 1, 2, 3, 4]
            row = []
            for j in range(4):
                row.append(remaining.pop(index(u[4 * r + j], len(remaining))))
            rows.append(row)
        return rows
    if game == "slot":
        spins = []
        for k in range(options["spins"]):
            v = u[8 * k:8 * k + 5]
            spins.append([index(v[i], 30) for i in range(4)] + [index(v[4], 41)])
        return spins
    if game == "plinko":
        path = [index(x, 2) for x in u[:options["pins"]]]
        return {"bucket": sum(path), "path": path}
    raise ValueError(game)


# --- the vectors ------------------------------------------------------------------------

# (server_seed, client_seed): a platform-style hex seed, an empty client seed, and non-ASCII
# text (the generator hashes UTF-8 bytes).
SEEDS = [
    ("3f1c8a0e5b7d92c4e6a1f0b3d5c7e9a2b4d6f8a0c2e4f6a8b0d2f4a6c8e0a2b4", "lucky-client"),
    ("server seed with spaces", ""),
    ("sérveur-🂡", "clïent"),
]
SALTS = ["0", "1", "2", "17", "255", "1000000",
         "9c0f7d1e2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5"]

GAME_OPTIONS = [
    ("dice", {}), ("double", {}), ("x50", {}),
    ("jackpot", {"tickets": 1}), ("jackpot", {"tickets": 7}), ("jackpot", {"tickets": 1000}),
    ("jackpot", {"tickets": TWO64 - 1}),
    ("crash", {}), ("overgo", {}),
    ("mines", {"mines": 1}), ("mines", {"mines": 3}), ("mines", {"mines": 24}),
    ("tower", {}),
    ("slot", {"spins": 1}), ("slot", {"spins": 3}),
] + [("plinko", {"pins": n}) for n in range(8, 17)]


def crafted_bytes():
    """Raw-byte vectors at the edges: all zeros, all ones, and rounding ties."""
    out = []
    zeros = bytes(64 * 5)
    ones = b"\xff" * (64 * 5)
    for game, options in GAME_OPTIONS:
        for data in (zeros, ones):
            needed = -(-numbers_needed(game, options) // 8) * 64
            out.append((data[:needed], game, options))

    def block_with_first(u):
        return u.to_bytes(8, "big") + bytes(56)

    def smallest_u_with_index(k, n):
        return -(-(k * TWO64) // n)

    # h + 1 = 128: 950000 / 128 = 7421.875, a tie that rounds up to 7421.88.
    # h + 1 = 400000: 970000 / 400000 = 2.425, a tie that rounds up to 2.43.
    # h = 949999 / 969999: exactly 1.00; the largest h gives the floor 1.00.
    for game, h in [("crash", 127), ("overgo", 399999), ("crash", 949999), ("overgo", 969999),
                    ("crash", 999999), ("crash", 0), ("overgo", 1)]:
        u = smallest_u_with_index(h, 10 ** 6)
        out.append((block_with_first(u), game, {}))
        if h > 0:
            out.append((block_with_first(u - 1), game, {}))
    for k in (0, 1, 5000, 9999, 10000):
        out.append((block_with_first(smallest_u_with_index(k, 10001)), "dice", {}))
    return out


def main():
    lines = []
    for server_seed, client_seed in SEEDS:
        for salt in SALTS:
            for game, options in GAME_OPTIONS:
                u = seeded_numbers(server_seed, client_seed, salt, numbers_needed(game, options))
                lines.append({
                    "server_seed": server_seed,
                    "client_seed": client_seed,
                    "salt": salt,
                    "game": game,
                    "options": options,
                    "expected": {"game": game, "result": play(game, options, u)},
                })
    for data, game, options in crafted_bytes():
        lines.append({
            "bytes": data.hex(),
            "game": game,
            "options": options,
            "expected": {"game": game, "result": play(game, options, numbers_from_bytes(data))},
        })
    for line in lines:
        print(json.dumps(line, ensure_ascii=False, separators=(",", ":")))


if __name__ == "__main__":
    main()
