#!/usr/bin/env python3
"""Golden deal vectors for fairdeal, from an implementation independent of the Rust code.

Written from the SPEC (sections 1 and 2) with the Python standard library only, so that a
bug shared by the Rust crate and this script would need the same misreading twice.

    python3 generate_deals.py           # rewrite deals.json next to this script
    python3 generate_deals.py --check   # exit 1 if deals.json differs from a fresh run

The Rust test `tests/golden.rs` reads deals.json and compares every field.
"""

import hashlib
import hmac
import json
import math
import os
import sys

# ---------------------------------------------------------------------------------------
# Decks (SPEC section 2), written out from the spec's wording, not copied from Rust.

SUITS = "SHDC"


def plain_deck(ranks):
    return [rank + suit for suit in SUITS for rank in ranks]


TAROT = (
    ["T%d" % t for t in range(1, 22)]
    + ["EX"]
    + [rank + suit for suit in SUITS for rank in
       ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "N", "Q", "K"]]
)

DECKS = {
    "bridge": plain_deck("AKQJT98765432"),
    "dix": plain_deck("AKQJT98765"),
    "ruff": plain_deck("AKQJT9875"),
    "tarot3": TAROT,
    "tarot4": TAROT,
    "tarot5": TAROT,
}

PLAYERS = {"bridge": 4, "dix": 4, "ruff": 4, "tarot3": 3, "tarot4": 4, "tarot5": 5}
CHIEN = {"tarot3": 6, "tarot4": 6, "tarot5": 3}

# ---------------------------------------------------------------------------------------
# Generator (SPEC section 1).


def key_of(server_seed, salt):
    return hashlib.sha256((server_seed + ":" + salt).encode("utf-8")).digest()


def cursor_bytes(key, client_seed, cursor):
    message = (client_seed + ":" + str(cursor)).encode("utf-8")
    return hmac.new(key, message, hashlib.sha512).digest()


def numbers(key, client_seed, count):
    """The first `count` numbers U (as ints) and how many cursors they took."""
    out = []
    cursor = 0
    while len(out) < count:
        block = cursor_bytes(key, client_seed, cursor)
        for j in range(8):
            out.append(int.from_bytes(block[8 * j: 8 * j + 8], "big"))
        cursor += 1
    return out[:count], cursor


def pick(number, n):
    # floor(u * n) with u = number / 2^64, exactly.
    return (number * n) >> 64


# ---------------------------------------------------------------------------------------
# Shuffle, dealing, distribution numbers (SPEC section 2).


def shuffle(n, nums):
    remaining = list(range(n))
    order, indices = [], []
    for u in nums[: n - 1]:
        i = pick(u, len(remaining))
        indices.append(i)
        order.append(remaining.pop(i))
    order.append(remaining.pop())
    indices.append(0)
    return order, indices


def split(game, order):
    players = PLAYERS[game]
    hands = [[] for _ in range(players)]
    chien = []
    if game.startswith("tarot"):
        chien_size = CHIEN[game]
        position = 0
        packet = 0
        while position < len(order):
            hands[packet % players].extend(order[position: position + 3])
            position += 3
            if packet > 0 and len(chien) < chien_size and position < len(order):
                chien.append(order[position])
                position += 1
            packet += 1
    else:
        for k, card in enumerate(order):
            hands[k % players].append(card)
    return hands, chien


def rank(indices):
    n = len(indices)
    return sum(i * math.factorial(n - 1 - k) for k, i in enumerate(indices))


def unrank(number, n):
    """Order of the deal numbered `number`, by direct lexicographic unranking."""
    assert 0 <= number < math.factorial(n)
    remaining = list(range(n))
    order = []
    for k in range(n):
        f = math.factorial(n - 1 - k)
        i, number = divmod(number, f)
        order.append(remaining.pop(i))
    return order


# ---------------------------------------------------------------------------------------
# The vectors.

SEEDS = [
    ("server", "client", "0"),
    ("server", "client", "1"),
    # A platform-style seed (64 hex) with a table hand number as salt.
    ("5f2b8c0d9e4a7b16c3d8e0f1a2b4c6d8e9f0a1b2c3d4e5f60718293a4b5c6d7e", "table-42 players", "17"),
    # Unicode everywhere: UTF-8 bytes are hashed.
    ("clé secrète ♠♥♦♣", "joueurs: Zoë, Łukasz, 李雷, 🂡", "ronde-β"),
    # Empty client seed and salt are valid strings.
    ("s", "", ""),
    # A client seed longer than one SHA-512 block (128 bytes).
    ("long-client", "x" * 150 + "é", "3"),
    # A fresh-round salt (64 hex) and a tournament salt.
    ("organiser secret", "2024-06-01 lottery 07 13 21 34 40 + 05",
     "a3f1c2e4b5d60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"),
    ("organiser secret", "beacon round 4812793", "session2:17"),
]


def deal_vector(game, server_seed, client_seed, salt):
    codes = DECKS[game]
    n = len(codes)
    key = key_of(server_seed, salt)
    nums, cursors_used = numbers(key, client_seed, n - 1)
    order, indices = shuffle(n, nums)
    hands, chien = split(game, order)
    number = rank(indices)
    assert unrank(number, n) == order
    assert sorted(order) == list(range(n))
    chien_size = CHIEN.get(game, 0)
    assert len(chien) == chien_size
    assert all(len(hand) == (n - chien_size) // PLAYERS[game] for hand in hands)
    return {
        "game": game,
        "server_seed": server_seed,
        "client_seed": client_seed,
        "salt": salt,
        "key": key.hex(),
        "cursor0": cursor_bytes(key, client_seed, 0).hex(),
        "cursor1": cursor_bytes(key, client_seed, 1).hex(),
        "cursors_used": cursors_used,
        "indices": indices,
        "order": [codes[c] for c in order],
        "hands": [[codes[c] for c in hand] for hand in hands],
        "chien": [codes[c] for c in chien],
        "distribution_number": str(number),
    }


def number_vectors(game):
    codes = DECKS[game]
    n = len(codes)
    limit = math.factorial(n)
    # Edges, and values spread over the range by fixed fractions of n!.
    values = [0, 1, limit - 1, limit // 2, limit // 3, (limit * 7) // 11, 10**20 % limit]
    out = []
    for value in values:
        order = unrank(value, n)
        hands, chien = split(game, order)
        out.append({
            "game": game,
            "distribution_number": str(value),
            "order": [codes[c] for c in order],
            "hands": [[codes[c] for c in hand] for hand in hands],
            "chien": [codes[c] for c in chien],
        })
    return out


def build():
    return {
        "about": "Golden vectors from generate_deals.py (independent Python implementation "
                 "of SPEC sections 1-2). Regenerate with: python3 generate_deals.py",
        "decks": {game: codes for game, codes in DECKS.items()},
        "factorials": {game: str(math.factorial(len(codes))) for game, codes in DECKS.items()},
        "deals": [deal_vector(game, *seeds) for game in DECKS for seeds in SEEDS],
        "numbers": [v for game in DECKS for v in number_vectors(game)],
    }


def render():
    """JSON with one line per deck, factorial, deal and number: diffable and compact."""
    data = build()

    def compact(value):
        return json.dumps(value, ensure_ascii=False)

    lines = ["{", ' "about": %s,' % compact(data["about"])]
    for section in ("decks", "factorials"):
        items = list(data[section].items())
        lines.append(' "%s": {' % section)
        for i, (game, value) in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            lines.append("  %s: %s%s" % (compact(game), compact(value), comma))
        lines.append(" },")
    for section in ("deals", "numbers"):
        items = data[section]
        lines.append(' "%s": [' % section)
        for i, value in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            lines.append("  %s%s" % (compact(value), comma))
        lines.append(" ]," if section == "deals" else " ]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == data
    return text


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deals.json")
    text = render()
    if "--check" in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print("deals.json is out of date: run generate_deals.py", file=sys.stderr)
                return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
