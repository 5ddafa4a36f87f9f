//! Public verification: everything here computes only from what the caller gives
//! (revealed seeds, distribution numbers, card codes), so an auditor needs no trust in the
//! operator. Pure functions over the fairness crate, returning wire messages.

use fairdeal_fairness::commitment::Commitment;
use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::duplicate::{self, Candidate, Selection};
use fairdeal_fairness::explain::Explanation;
use fairdeal_fairness::number;
use fairdeal_fairness::outcome::{Game, Options, Outcome, Round};
use fairdeal_fairness::{Deck, Generator};
use fairdeal_kit::status::shown;
use fairdeal_proto::fairdeal::dealing::v1 as pb;

/// A request that cannot be verified, with the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct VerifyError {
    /// The field.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

fn invalid(field: &'static str, reason: impl ToString) -> VerifyError {
    VerifyError {
        field,
        reason: reason.to_string(),
    }
}

// ---- Bounds of every text field (documented in proto/fairdeal/dealing/v1/dealing.proto) ----

/// Longest deck name accepted before parsing (the names are at most 6 characters).
pub const MAX_DECK_CHARS: usize = 16;
/// Longest game name accepted before parsing (the names are at most 7 characters).
pub const MAX_GAME_CHARS: usize = 16;
/// Length of a server seed: SPEC section 1, 32 bytes written as lowercase hex.
pub const SERVER_SEED_CHARS: usize = 64;
/// Length of a commitment: lowercase hex SHA-256 (either case accepted when compared).
pub const COMMITMENT_CHARS: usize = 64;
/// Longest client seed accepted for verification, in bytes: a table's client seed is the
/// 64-hex contributions hash, `:` and a delayed value of at most 1024 bytes (a seed pair's
/// is at most 128 bytes, a tournament's delayed value at most 1024).
pub const MAX_CLIENT_SEED_BYTES: usize = 64 + 1 + 1024;
/// Longest salt accepted, in bytes: SPEC's salts are a 64-hex round salt, a decimal hand or
/// bet counter, `<session>:<board>` or `<sequence>:dup:<j>`, all at most 64 bytes.
pub const MAX_SALT_BYTES: usize = 64;
/// Longest distribution number accepted, in characters (78! has 116 digits; some room
/// for leading zeros).
pub const MAX_NUMBER_CHARS: usize = 128;
/// Most card codes in an order (the largest deck, Tarot, has 78 cards).
pub const MAX_ORDER_CARDS: usize = 78;
/// Longest card code accepted before lookup (codes are 2 or 3 characters).
pub const MAX_CARD_CODE_CHARS: usize = 8;
/// Longest text accepted where a UUID is expected (the URN form is 45 characters).
pub const MAX_UUID_CHARS: usize = 45;

/// Rejects text longer than `max` bytes, naming the field and the bound.
fn bounded(field: &'static str, value: &str, max: usize) -> Result<(), VerifyError> {
    if value.len() > max {
        return Err(invalid(
            field,
            format!("is {} bytes, at most {max} allowed", value.len()),
        ));
    }
    Ok(())
}

/// Parses a UUID field (`table_id`, `bet_id`), bounded, quoting a short prefix of a bad one.
pub fn parse_uuid(field: &'static str, value: &str) -> Result<uuid::Uuid, VerifyError> {
    if value.is_empty() {
        return Err(invalid(field, "is required (a UUID)"));
    }
    if value.len() > MAX_UUID_CHARS {
        return Err(invalid(
            field,
            format!(
                "must be a UUID (at most {MAX_UUID_CHARS} characters), got {} bytes",
                value.len()
            ),
        ));
    }
    uuid::Uuid::parse_str(value)
        .map_err(|_| invalid(field, format!("must be a UUID, got \"{}\"", shown(value))))
}

/// A server seed as SPEC section 1 writes it: exactly 64 lowercase hex characters. Anything
/// else (empty, uppercase, another length) cannot be a platform seed and would silently
/// verify a different deal, so it is refused.
pub fn server_seed<'a>(field: &'static str, value: &'a str) -> Result<&'a str, VerifyError> {
    if value.is_empty() {
        return Err(invalid(
            field,
            "is required: the revealed seed, 64 lowercase hex characters",
        ));
    }
    if value.len() != SERVER_SEED_CHARS {
        return Err(invalid(
            field,
            format!(
                "must be {SERVER_SEED_CHARS} lowercase hex characters, got {} bytes",
                value.len()
            ),
        ));
    }
    if let Some(position) = value
        .bytes()
        .position(|b| !matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(invalid(
            field,
            format!(
                "must be {SERVER_SEED_CHARS} lowercase hex characters (0-9, a-f); character {} is not",
                position + 1
            ),
        ));
    }
    Ok(value)
}

/// An optional published commitment: empty, or 64 hex characters (compared ignoring case).
pub fn commitment(value: &str) -> Result<Option<&str>, VerifyError> {
    if value.is_empty() {
        return Ok(None);
    }
    if value.len() != COMMITMENT_CHARS || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(
            "commitment",
            format!(
                "must be empty or the {COMMITMENT_CHARS}-hex SHA-256 of the server seed, got \"{}\"",
                shown(value)
            ),
        ));
    }
    Ok(Some(value))
}

/// A client seed to verify with: 1 to [`MAX_CLIENT_SEED_BYTES`] bytes without control
/// characters (every client seed the platform uses is so).
pub fn client_seed(value: &str) -> Result<&str, VerifyError> {
    if value.is_empty() {
        return Err(invalid("client_seed", "is required"));
    }
    bounded("client_seed", value, MAX_CLIENT_SEED_BYTES)?;
    if value.chars().any(char::is_control) {
        return Err(invalid(
            "client_seed",
            "must not contain control characters",
        ));
    }
    Ok(value)
}

/// A salt: 1 to [`MAX_SALT_BYTES`] bytes without control characters.
pub fn salt(value: &str) -> Result<&str, VerifyError> {
    if value.is_empty() {
        return Err(invalid(
            "salt",
            "is required (e.g. the hand number or bet counter in decimal)",
        ));
    }
    bounded("salt", value, MAX_SALT_BYTES)?;
    if value.chars().any(char::is_control) {
        return Err(invalid("salt", "must not contain control characters"));
    }
    Ok(value)
}

/// The seeds of a verification request, checked.
struct Seeds<'a> {
    server: &'a str,
    client: &'a str,
}

fn seeds<'a>(server: &'a str, client: &'a str) -> Result<Seeds<'a>, VerifyError> {
    Ok(Seeds {
        server: server_seed("server_seed", server)?,
        client: client_seed(client)?,
    })
}

/// Parses a deck name.
pub fn deck(name: &str) -> Result<Deck, VerifyError> {
    bounded("deck", name, MAX_DECK_CHARS)?;
    name.parse().map_err(|e| invalid("deck", e))
}

/// Validates a game and its options into a round.
pub fn round(options: Option<&pb::GameOptions>) -> Result<Round, VerifyError> {
    let options = options.ok_or_else(|| invalid("options", "required"))?;
    bounded("options.game", &options.game, MAX_GAME_CHARS)?;
    let game: Game = options
        .game
        .parse()
        .map_err(|e| invalid("options.game", e))?;
    Round::new(
        game,
        &Options {
            mines: options.mines,
            tickets: options.tickets,
            pins: options.pins,
            spins: options.spins,
        },
    )
    .map_err(|e| invalid("options", e))
}

/// The wire form of a deal.
pub fn deal_message(deal: &Deal) -> pb::Deal {
    let codes = |cards: &[u8]| -> Vec<String> {
        deal.codes(cards).into_iter().map(str::to_owned).collect()
    };
    pb::Deal {
        deck: deal.deck.name().to_owned(),
        order: codes(&deal.order),
        hands: deal
            .hands
            .iter()
            .map(|h| pb::Hand { cards: codes(h) })
            .collect(),
        chien: codes(&deal.chien),
        distribution_number: deal.distribution_number().to_string(),
    }
}

/// The result as `fairdeal outcome` prints it (`{"game": .., "result": ..}`).
pub fn outcome_json(outcome: &Outcome) -> Result<String, VerifyError> {
    serde_json::to_string(outcome).map_err(|e| invalid("result", e))
}

/// A step-by-step walk-through of a seeded deal (key, cursor bytes, each pick, the hands
/// and the distribution number).
pub fn explain_deal(
    deck: Deck,
    server_seed: &str,
    client_seed: &str,
    salt: &str,
    deal: &Deal,
) -> String {
    let generator = Generator::new(server_seed, client_seed, salt);
    // Every number of the cursors the shuffle reads, so each cursor shows its 64 bytes.
    let cursors = deck.len().saturating_sub(1).div_ceil(8);
    let numbers: Vec<u64> = generator.numbers().take(cursors * 8).collect();
    let commitment = Commitment::of(server_seed);
    let mut e = Explanation::new();
    e.line(format!("game: {deck}"))
        .line(format!(
            "commitment = SHA-256(server_seed) = {commitment} (short code {})",
            commitment.short_code()
        ))
        .seeds(server_seed, client_seed, salt, generator.key())
        .numbers(Some(client_seed), &numbers)
        .shuffle(deck.codes(), &numbers)
        .deal(deal)
        .distribution_number(deal);
    e.finish().to_owned()
}

/// `VerifyDeal`.
pub fn verify_deal(request: &pb::VerifyDealRequest) -> Result<pb::VerifyDealResponse, VerifyError> {
    let deck = deck(&request.deck)?;
    let seeds = seeds(&request.server_seed, &request.client_seed)?;
    let salt = salt(&request.salt)?;
    let published = commitment(&request.commitment)?;
    let deal = Deal::from_seeds(deck, seeds.server, seeds.client, salt);
    let commitment = Commitment::of(seeds.server).to_hex();
    let explanation = if request.explain {
        explain_deal(deck, seeds.server, seeds.client, salt, &deal)
    } else {
        String::new()
    };
    Ok(pb::VerifyDealResponse {
        deal: Some(deal_message(&deal)),
        commitment_matches: published.is_some_and(|p| commitment.eq_ignore_ascii_case(p)),
        commitment,
        explanation,
    })
}

/// `VerifyOutcome`.
pub fn verify_outcome(
    request: &pb::VerifyOutcomeRequest,
) -> Result<pb::VerifyOutcomeResponse, VerifyError> {
    let round = round(request.options.as_ref())?;
    let seeds = seeds(&request.server_seed, &request.client_seed)?;
    let salt = salt(&request.salt)?;
    let published = commitment(&request.commitment)?;
    let (outcome, explanation) = if request.explain {
        let (o, e) = round.explain_seeds(seeds.server, seeds.client, salt);
        (o, e.finish().to_owned())
    } else {
        (
            round.from_seeds(seeds.server, seeds.client, salt),
            String::new(),
        )
    };
    let commitment = Commitment::of(seeds.server).to_hex();
    Ok(pb::VerifyOutcomeResponse {
        result_json: outcome_json(&outcome)?,
        result_text: outcome.to_string(),
        commitment_matches: published.is_some_and(|p| commitment.eq_ignore_ascii_case(p)),
        commitment,
        explanation,
    })
}

/// The wire form of a duplicate candidate.
pub fn candidate_message(c: &Candidate) -> pb::Candidate {
    pb::Candidate {
        index: c.index,
        salt: c.salt.clone(),
        distribution_number: c.deal.distribution_number().to_string(),
        rejection: c
            .judgement
            .rejection
            .map(|r| r.to_string())
            .unwrap_or_default(),
    }
}

/// A duplicate selection for hand `hand`.
pub fn select_duplicate(
    server_seed: &str,
    client_seed: &str,
    hand: u64,
) -> Result<Selection, VerifyError> {
    duplicate::select(server_seed, client_seed, hand).map_err(|e| invalid("hand", e))
}

/// `VerifyDuplicate`.
pub fn verify_duplicate(
    request: &pb::VerifyDuplicateRequest,
) -> Result<pb::VerifyDuplicateResponse, VerifyError> {
    let seeds = seeds(&request.server_seed, &request.client_seed)?;
    let selection = select_duplicate(seeds.server, seeds.client, request.hand)?;
    Ok(pb::VerifyDuplicateResponse {
        deal: Some(deal_message(&selection.accepted.deal)),
        candidates: selection.candidates().map(candidate_message).collect(),
        commitment: Commitment::of(seeds.server).to_hex(),
        explanation: if request.explain {
            selection
                .explain(seeds.server, seeds.client)
                .finish()
                .to_owned()
        } else {
            String::new()
        },
    })
}

/// `DealFromNumber`.
pub fn deal_from_number(
    request: &pb::DealFromNumberRequest,
) -> Result<pb::DealFromNumberResponse, VerifyError> {
    let deck = deck(&request.deck)?;
    bounded(
        "distribution_number",
        &request.distribution_number,
        MAX_NUMBER_CHARS,
    )?;
    let n = number::parse(&request.distribution_number, deck.len())
        .map_err(|e| invalid("distribution_number", e))?;
    let deal = Deal::from_number(deck, &n).map_err(|e| invalid("distribution_number", e))?;
    Ok(pb::DealFromNumberResponse {
        deal: Some(deal_message(&deal)),
    })
}

/// `NumberOfDeal`.
pub fn number_of_deal(
    request: &pb::NumberOfDealRequest,
) -> Result<pb::NumberOfDealResponse, VerifyError> {
    let deck = deck(&request.deck)?;
    if request.order.len() > MAX_ORDER_CARDS {
        return Err(invalid(
            "order",
            format!(
                "has {} card codes, at most {MAX_ORDER_CARDS} allowed",
                request.order.len()
            ),
        ));
    }
    if let Some((i, code)) = request
        .order
        .iter()
        .enumerate()
        .find(|(_, c)| c.len() > MAX_CARD_CODE_CHARS)
    {
        return Err(invalid(
            "order",
            format!(
                "card code {} is {} bytes, at most {MAX_CARD_CODE_CHARS} allowed",
                i + 1,
                code.len()
            ),
        ));
    }
    let deal = Deal::from_codes(deck, request.order.iter().map(String::as_str))
        .map_err(|e| invalid("order", e))?;
    Ok(pb::NumberOfDealResponse {
        deal: Some(deal_message(&deal)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A server seed in the SPEC's form (64 lowercase hex characters).
    const SEED: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn verify_deal_matches_the_fairness_crate() {
        let request = pb::VerifyDealRequest {
            deck: "tarot4".into(),
            server_seed: SEED.into(),
            client_seed: "c".into(),
            salt: "3".into(),
            explain: true,
            commitment: Commitment::of(SEED).to_hex().to_uppercase(),
        };
        let response = verify_deal(&request).unwrap();
        let deal = Deal::from_seeds(Deck::Tarot4, SEED, "c", "3");
        assert_eq!(response.deal, Some(deal_message(&deal)));
        assert!(response.commitment_matches);
        assert!(
            response
                .explanation
                .contains(&deal.distribution_number().to_string())
        );
        assert_eq!(response.deal.unwrap().chien.len(), 6);
    }

    #[test]
    fn bad_requests_name_the_field() {
        let e = verify_deal(&pb::VerifyDealRequest {
            deck: "poker".into(),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.field, "deck");
        let e = deal_from_number(&pb::DealFromNumberRequest {
            deck: "dix".into(),
            distribution_number: "-1".into(),
        })
        .unwrap_err();
        assert_eq!(e.field, "distribution_number");
        let e = round(Some(&pb::GameOptions {
            game: "mines".into(),
            ..Default::default()
        }))
        .unwrap_err();
        assert_eq!(e.field, "options");
    }

    #[test]
    fn outcome_json_is_the_cli_form() {
        let r = verify_outcome(&pb::VerifyOutcomeRequest {
            options: Some(pb::GameOptions {
                game: "dice".into(),
                ..Default::default()
            }),
            server_seed: SEED.into(),
            client_seed: "c".into(),
            salt: "0".into(),
            ..Default::default()
        })
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.result_json).unwrap();
        assert_eq!(v["game"], "dice");
    }

    fn deal_request(server_seed: &str) -> pb::VerifyDealRequest {
        pb::VerifyDealRequest {
            deck: "dix".into(),
            server_seed: server_seed.into(),
            client_seed: "c".into(),
            salt: "0".into(),
            ..Default::default()
        }
    }

    #[test]
    fn server_seeds_must_be_64_lowercase_hex() {
        let long = "a".repeat(1_000_000);
        let upper = SEED.to_uppercase();
        let short = &SEED[..63];
        let not_hex = format!("{}g", &SEED[..63]);
        for bad in ["", short, &upper, &not_hex, "s", &long] {
            let e = verify_deal(&deal_request(bad)).unwrap_err();
            assert_eq!(e.field, "server_seed", "{bad:.70}: {e}");
            assert!(e.reason.contains("64"), "{e}");
            assert!(e.to_string().len() < 120, "{e}");
            let e = verify_outcome(&pb::VerifyOutcomeRequest {
                options: Some(pb::GameOptions {
                    game: "dice".into(),
                    ..Default::default()
                }),
                server_seed: bad.into(),
                client_seed: "c".into(),
                salt: "0".into(),
                ..Default::default()
            })
            .unwrap_err();
            assert_eq!(e.field, "server_seed");
            let e = verify_duplicate(&pb::VerifyDuplicateRequest {
                server_seed: bad.into(),
                client_seed: "c".into(),
                ..Default::default()
            })
            .unwrap_err();
            assert_eq!(e.field, "server_seed");
        }
        assert!(verify_deal(&deal_request(SEED)).is_ok());
    }

    #[test]
    fn other_verification_fields_are_bounded() {
        let with = |f: &dyn Fn(&mut pb::VerifyDealRequest)| {
            let mut r = deal_request(SEED);
            f(&mut r);
            verify_deal(&r)
        };
        let field = |f: &dyn Fn(&mut pb::VerifyDealRequest)| with(f).unwrap_err().field;
        assert_eq!(field(&|r| r.client_seed = String::new()), "client_seed");
        assert_eq!(
            field(&|r| r.client_seed = "c".repeat(MAX_CLIENT_SEED_BYTES + 1)),
            "client_seed"
        );
        assert_eq!(field(&|r| r.client_seed = "a\nb".into()), "client_seed");
        // The longest table client seed: hash, ':' and a 1024-byte delayed value.
        assert!(with(&|r| r.client_seed = format!("{SEED}:{}", "9".repeat(1024))).is_ok());
        assert_eq!(field(&|r| r.salt = String::new()), "salt");
        assert_eq!(field(&|r| r.salt = "1".repeat(65)), "salt");
        assert!(with(&|r| r.salt = "7".repeat(64)).is_ok());
        assert!(with(&|r| r.salt = "3:dup:12".into()).is_ok());
        assert_eq!(field(&|r| r.commitment = "abc".into()), "commitment");
        assert_eq!(field(&|r| r.commitment = "z".repeat(64)), "commitment");
        assert_eq!(field(&|r| r.deck = "d".repeat(1_000_000)), "deck");
        let e = with(&|r| r.commitment = "x".repeat(1_000_000)).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");
        // Without a commitment nothing matches; a wrong one does not either.
        let r = with(&|_| {}).unwrap();
        assert!(!r.commitment_matches);
        assert!(
            !with(&|r| r.commitment = "0".repeat(64))
                .unwrap()
                .commitment_matches
        );

        let e = deal_from_number(&pb::DealFromNumberRequest {
            deck: "dix".into(),
            distribution_number: "1".repeat(1_000_000),
        })
        .unwrap_err();
        assert_eq!(e.field, "distribution_number");
        assert!(e.reason.contains("128"), "{e}");
        let e = number_of_deal(&pb::NumberOfDealRequest {
            deck: "dix".into(),
            order: vec!["AS".into(); 79],
        })
        .unwrap_err();
        assert_eq!(e.field, "order");
        let e = number_of_deal(&pb::NumberOfDealRequest {
            deck: "dix".into(),
            order: vec!["A".repeat(100_000)],
        })
        .unwrap_err();
        assert_eq!(e.field, "order");
        let e = round(Some(&pb::GameOptions {
            game: "g".repeat(100_000),
            ..Default::default()
        }))
        .unwrap_err();
        assert_eq!(e.field, "options.game");
        let e = parse_uuid("table_id", &"x".repeat(100_000)).unwrap_err();
        assert_eq!(e.field, "table_id");
        assert!(e.reason.contains("45"), "{e}");
        assert_eq!(
            parse_uuid("bet_id", "nope").unwrap_err().to_string(),
            "bet_id: must be a UUID, got \"nope\""
        );
    }

    proptest! {
        // Number -> deal -> order -> number is the identity over the whole range.
        #[test]
        fn numbers_and_deals_round_trip(seed in "[a-z]{1,8}", salt in 0u64..1000) {
            let deal = Deal::from_seeds(Deck::Ruff, &seed, "c", &salt.to_string());
            let number = deal.distribution_number().to_string();
            let back = deal_from_number(&pb::DealFromNumberRequest {
                deck: "ruff".into(),
                distribution_number: number.clone(),
            }).unwrap().deal.unwrap();
            prop_assert_eq!(&back.order, &deal_message(&deal).order);
            let again = number_of_deal(&pb::NumberOfDealRequest {
                deck: "ruff".into(),
                order: back.order.clone(),
            }).unwrap().deal.unwrap();
            prop_assert_eq!(again.distribution_number, number);
        }
    }
}
