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

/// Parses a deck name.
pub fn deck(name: &str) -> Result<Deck, VerifyError> {
    name.parse().map_err(|e| invalid("deck", e))
}

/// Validates a game and its options into a round.
pub fn round(options: Option<&pb::GameOptions>) -> Result<Round, VerifyError> {
    let options = options.ok_or_else(|| invalid("options", "required"))?;
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
    let deal = Deal::from_seeds(
        deck,
        &request.server_seed,
        &request.client_seed,
        &request.salt,
    );
    let commitment = Commitment::of(&request.server_seed).to_hex();
    let explanation = if request.explain {
        explain_deal(
            deck,
            &request.server_seed,
            &request.client_seed,
            &request.salt,
            &deal,
        )
    } else {
        String::new()
    };
    Ok(pb::VerifyDealResponse {
        deal: Some(deal_message(&deal)),
        commitment_matches: commitment.eq_ignore_ascii_case(&request.commitment),
        commitment,
        explanation,
    })
}

/// `VerifyOutcome`.
pub fn verify_outcome(
    request: &pb::VerifyOutcomeRequest,
) -> Result<pb::VerifyOutcomeResponse, VerifyError> {
    let round = round(request.options.as_ref())?;
    let (outcome, explanation) = if request.explain {
        let (o, e) = round.explain_seeds(&request.server_seed, &request.client_seed, &request.salt);
        (o, e.finish().to_owned())
    } else {
        (
            round.from_seeds(&request.server_seed, &request.client_seed, &request.salt),
            String::new(),
        )
    };
    let commitment = Commitment::of(&request.server_seed).to_hex();
    Ok(pb::VerifyOutcomeResponse {
        result_json: outcome_json(&outcome)?,
        result_text: outcome.to_string(),
        commitment_matches: commitment.eq_ignore_ascii_case(&request.commitment),
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
    let selection = select_duplicate(&request.server_seed, &request.client_seed, request.hand)?;
    Ok(pb::VerifyDuplicateResponse {
        deal: Some(deal_message(&selection.accepted.deal)),
        candidates: selection.candidates().map(candidate_message).collect(),
        commitment: Commitment::of(&request.server_seed).to_hex(),
        explanation: if request.explain {
            selection
                .explain(&request.server_seed, &request.client_seed)
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

    #[test]
    fn verify_deal_matches_the_fairness_crate() {
        let request = pb::VerifyDealRequest {
            deck: "tarot4".into(),
            server_seed: "s".into(),
            client_seed: "c".into(),
            salt: "3".into(),
            explain: true,
            commitment: Commitment::of("s").to_hex().to_uppercase(),
        };
        let response = verify_deal(&request).unwrap();
        let deal = Deal::from_seeds(Deck::Tarot4, "s", "c", "3");
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
            server_seed: "s".into(),
            client_seed: "c".into(),
            salt: "0".into(),
            ..Default::default()
        })
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.result_json).unwrap();
        assert_eq!(v["game"], "dice");
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
