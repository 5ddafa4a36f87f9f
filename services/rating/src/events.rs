//! Wire <-> domain: the tables' `GameFinished` into a [`Finished`] game (re-validated: a
//! malformed one is refused with the field at fault), and a [`SeatChange`] into the
//! `RatingChanged` the service records.
//!
//! Two shapes, told apart by `variant.tarot`: Jeu du 10 (no `tarot`; four players, teams
//! {0, 2} and {1, 3}, the winner a team) and French Tarot (`tarot` set, no deck; one player
//! per seat, 3 to 5 of them, one side per seat whose `team` is the seat, a final score per
//! side, the winner the first side with the highest score). A four-seat Tarot game is never
//! read as Jeu du 10: its unset deck would otherwise read as `dix`.

use fairdeal_eventstore::RecordedEvent;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use uuid::Uuid;

use crate::domain::{Finished, FinishedGame, GameKind, Holder, SeatChange, TarotGame};

/// Why a `GameFinished` cannot be read: the consumer parks (dead-letters) it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// The payload is not a `GameFinished`.
    #[error("payload does not decode as fairdeal.tables.v1.GameFinished: {0}")]
    Decode(String),
    /// A field is out of its range or inconsistent.
    #[error("GameFinished.{field}: {reason}")]
    Field {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

fn field(field: &'static str, reason: impl Into<String>) -> Malformed {
    Malformed::Field {
        field,
        reason: reason.into(),
    }
}

/// The kind a table's options are rated in.
fn kind_of(variant: Option<&tpb::TableOptions>) -> Result<GameKind, Malformed> {
    let deck = variant.map_or(0, |v| v.deck);
    match tpb::Deck::try_from(deck) {
        Ok(tpb::Deck::Unspecified | tpb::Deck::Dix) => Ok(GameKind::JeuDu10Dix),
        Ok(tpb::Deck::Ruff) => Ok(GameKind::JeuDu10Ruff),
        Err(_) => Err(field("variant.deck", format!("unknown deck {deck}"))),
    }
}

/// The `GameFinished` `event` records and its table, checked to be the event's stream's.
fn decode(event: &RecordedEvent) -> Result<(tpb::GameFinished, Uuid), Malformed> {
    let message: tpb::GameFinished = event
        .decode_payload()
        .map_err(|e| Malformed::Decode(e.to_string()))?;
    let table_id =
        Uuid::parse_str(&message.table_id).map_err(|_| field("table_id", "not a UUID"))?;
    if event.stream_id.as_str() != format!("table-{table_id}") {
        return Err(field("table_id", "is not the table of the event's stream"));
    }
    Ok((message, table_id))
}

/// Who held each of the `count` seats: `players` must have one entry per seat.
fn holders(players: &[tpb::SeatPlayer], count: usize) -> Result<Vec<Holder>, Malformed> {
    if players.len() != count {
        return Err(field(
            "players",
            format!("{} entries, expected {count}", players.len()),
        ));
    }
    let mut seats = vec![None; count];
    for player in players {
        let seat = usize::try_from(player.seat)
            .ok()
            .filter(|s| *s < count)
            .ok_or_else(|| {
                field(
                    "players.seat",
                    format!("{} is not 0..{}", player.seat, count - 1),
                )
            })?;
        if seats[seat].is_some() {
            return Err(field("players.seat", format!("seat {seat} twice")));
        }
        seats[seat] = Some(match (player.bot, player.player_id.as_str()) {
            (true, "") => Holder::Bot,
            (false, id) => Holder::Player {
                id: Uuid::parse_str(id).map_err(|_| field("players.player_id", "not a UUID"))?,
                abandoned: player.abandoned,
            },
            (true, _) => {
                return Err(field(
                    "players.player_id",
                    format!("seat {seat} is a bot seat with a player"),
                ));
            }
        });
    }
    // `count` entries on distinct seats below `count`: every seat is filled.
    Ok(seats
        .into_iter()
        .map(|h| h.unwrap_or(Holder::Bot))
        .collect())
}

/// The finished game `event` records, of either shape (a `fairdeal.tables.v1.GameFinished`
/// of stream `table-<uuid>` whose correlation id is the table id): a French Tarot game when
/// `variant.tarot` is set, else a Jeu du 10 game.
pub fn read_game(event: &RecordedEvent) -> Result<Finished, Malformed> {
    let (message, table_id) = decode(event)?;
    match message.variant.as_ref().and_then(|v| v.tarot.as_ref()) {
        Some(tarot) => tarot_game(&message, table_id, tarot).map(Finished::Tarot),
        None => jeu_du_10(&message, table_id).map(Finished::JeuDu10),
    }
}

/// The finished Jeu du 10 game `event` records (as [`read_game`], refusing a Tarot game).
pub fn finished_game(event: &RecordedEvent) -> Result<FinishedGame, Malformed> {
    match read_game(event)? {
        Finished::JeuDu10(game) => Ok(game),
        Finished::Tarot(_) => Err(field("variant.tarot", "a French Tarot game, not Jeu du 10")),
    }
}

/// A Jeu du 10 `GameFinished` (no `variant.tarot`).
fn jeu_du_10(message: &tpb::GameFinished, table_id: Uuid) -> Result<FinishedGame, Malformed> {
    let holders = holders(&message.players, 4)?;
    let mut seats = [Holder::Bot; 4];
    seats.copy_from_slice(&holders);
    for team in &message.teams {
        let expected: &[u32] = match team.team {
            0 => &[0, 2],
            1 => &[1, 3],
            t => return Err(field("teams.team", format!("{t} is not 0 or 1"))),
        };
        let mut seats = team.seats.clone();
        seats.sort_unstable();
        if seats != expected {
            return Err(field(
                "teams.seats",
                format!("team {} is not seats {expected:?}", team.team),
            ));
        }
    }
    let winner = u8::try_from(message.winner)
        .ok()
        .filter(|w| *w < 2)
        .ok_or_else(|| field("winner", format!("{} is not 0 or 1", message.winner)))?;
    Ok(FinishedGame {
        table_id,
        kind: kind_of(message.variant.as_ref())?,
        seats,
        winner,
    })
}

/// A French Tarot `GameFinished` (`variant.tarot` set): `tarot.seats` players, one side per
/// seat, a final score per side, the winner the first side with the highest score.
fn tarot_game(
    message: &tpb::GameFinished,
    table_id: Uuid,
    tarot: &tpb::TarotOptions,
) -> Result<TarotGame, Malformed> {
    let count = usize::try_from(tarot.seats).unwrap_or(usize::MAX);
    let kind = GameKind::tarot(count).ok_or_else(|| {
        field(
            "variant.tarot.seats",
            format!("{} is not 3, 4 or 5", tarot.seats),
        )
    })?;
    if !(1..=10).contains(&tarot.rounds) {
        return Err(field(
            "variant.tarot.rounds",
            format!("{} is not 1..=10", tarot.rounds),
        ));
    }
    if let Some(variant) = &message.variant {
        // A Tarot table's Jeu du 10 options are all unset.
        let jeu_du_10 = [
            ("variant.deck", variant.deck != 0),
            ("variant.penalised_aces", variant.penalised_aces),
            ("variant.made_or_nothing", variant.made_or_nothing),
            ("variant.purchase", variant.purchase != 0),
            ("variant.budget", variant.budget.is_some()),
        ];
        if let Some((name, _)) = jeu_du_10.iter().find(|(_, set)| *set) {
            return Err(field(name, "a Jeu du 10 option on a French Tarot table"));
        }
    }
    let seats = holders(&message.players, count)?;
    if message.teams.len() != count {
        return Err(field(
            "teams",
            format!(
                "{} entries, expected one per seat ({count})",
                message.teams.len()
            ),
        ));
    }
    let mut sides = vec![false; count];
    for team in &message.teams {
        let side = usize::try_from(team.team)
            .ok()
            .filter(|t| *t < count)
            .ok_or_else(|| {
                field(
                    "teams.team",
                    format!("{} is not a seat (0..{})", team.team, count - 1),
                )
            })?;
        if std::mem::replace(&mut sides[side], true) {
            return Err(field("teams.team", format!("side {side} twice")));
        }
        if team.seats != [team.team] {
            return Err(field(
                "teams.seats",
                format!("side {side} is not seat {side} alone"),
            ));
        }
    }
    if message.final_scores.len() != count {
        return Err(field(
            "final_scores",
            format!(
                "{} entries, expected one per seat ({count})",
                message.final_scores.len()
            ),
        ));
    }
    let scores = message.final_scores.clone();
    // The first seat with the highest score (the tables' first side placed first).
    let first = scores.iter().enumerate().fold(
        0,
        |best, (seat, score)| if *score > scores[best] { seat } else { best },
    );
    if usize::try_from(message.winner).ok() != Some(first) {
        return Err(field(
            "winner",
            format!(
                "{}, the final scores place seat {first} first",
                message.winner
            ),
        ));
    }
    Ok(TarotGame {
        table_id,
        kind,
        seats,
        scores,
    })
}

/// The `RatingChanged` recording `seat` of `game`; `games_played` counts this game.
pub fn rating_changed(game: &Finished, seat: &SeatChange, games_played: u32) -> rpb::RatingChanged {
    let c = &seat.change;
    let weights = c.weights();
    rpb::RatingChanged {
        player_id: seat.player.to_string(),
        table_id: game.table_id().to_string(),
        game_kind: game.kind().as_str().to_owned(),
        rating_before: c.before().value(),
        rating_after: c.after().value(),
        expectation: c.expectation(),
        score: c.score().value(),
        k: c.k().value(),
        opponents: seat
            .opponents
            .iter()
            .zip(c.opponents().ratings())
            .zip(weights)
            .map(|((id, rating), weight)| rpb::Opponent {
                player_id: id.to_string(),
                rating_before: rating.value(),
                weight,
            })
            .collect(),
        games_played,
        abandoned: seat.abandoned,
        seat: seat.seat as u32,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use fairdeal_eventstore::{GENESIS_PREV_HASH, NewEvent, StreamId, seal};

    /// `message` as the tables' service records it first in `stream`.
    pub(crate) fn recorded(stream: &str, message: &tpb::GameFinished) -> RecordedEvent {
        let new = NewEvent::from_message(message).with_correlation_id(message.table_id.clone());
        seal(
            &StreamId::parse(stream).unwrap(),
            1,
            &GENESIS_PREV_HASH,
            new,
        )
        .unwrap()
    }

    fn finished(table: Uuid) -> tpb::GameFinished {
        tpb::GameFinished {
            table_id: table.to_string(),
            players: (0..4)
                .map(|seat| tpb::SeatPlayer {
                    seat,
                    player_id: Uuid::now_v7().to_string(),
                    bot: false,
                    abandoned: seat == 3,
                })
                .collect(),
            teams: vec![
                tpb::TeamSeats {
                    team: 0,
                    seats: vec![0, 2],
                },
                tpb::TeamSeats {
                    team: 1,
                    seats: vec![3, 1],
                },
            ],
            final_scores: vec![510, 230],
            winner: 0,
            variant: Some(tpb::TableOptions {
                deck: tpb::Deck::Ruff as i32,
                ..Default::default()
            }),
            hands_played: 7,
            reason: tpb::FinishReason::Abandoned as i32,
        }
    }

    /// A finished Tarot game of `seats` seats, seat 1 with the highest score.
    fn finished_tarot(table: Uuid, seats: u32) -> tpb::GameFinished {
        let scores = [-90, 270, -90, -60, -30];
        tpb::GameFinished {
            table_id: table.to_string(),
            players: (0..seats)
                .map(|seat| tpb::SeatPlayer {
                    seat,
                    player_id: Uuid::now_v7().to_string(),
                    bot: false,
                    abandoned: false,
                })
                .collect(),
            teams: (0..seats)
                .map(|seat| tpb::TeamSeats {
                    team: seat,
                    seats: vec![seat],
                })
                .collect(),
            final_scores: scores[..seats as usize].to_vec(),
            winner: 1,
            variant: Some(tpb::TableOptions {
                tarot: Some(tpb::TarotOptions { seats, rounds: 2 }),
                ..Default::default()
            }),
            hands_played: seats * 2,
            reason: tpb::FinishReason::Completed as i32,
        }
    }

    #[test]
    fn a_tarot_game_reads_in_its_kind() {
        for (seats, kind) in [
            (3, GameKind::Tarot3),
            (4, GameKind::Tarot4),
            (5, GameKind::Tarot5),
        ] {
            let table = Uuid::now_v7();
            let event = recorded(&format!("table-{table}"), &finished_tarot(table, seats));
            let Finished::Tarot(game) = read_game(&event).unwrap() else {
                panic!("{seats} seats read as Jeu du 10")
            };
            assert_eq!(game.kind, kind);
            assert_eq!(game.seats.len(), seats as usize);
            assert_eq!(game.placings()[1], 1);
            // Never a Jeu du 10 game, not even at four seats with the deck unset.
            let err = finished_game(&event).unwrap_err();
            assert!(
                matches!(&err, Malformed::Field { field, .. } if *field == "variant.tarot"),
                "{err}"
            );
        }
        // A Jeu du 10 event reads as before through `read_game` too.
        let table = Uuid::now_v7();
        let event = recorded(&format!("table-{table}"), &finished(table));
        assert!(matches!(read_game(&event), Ok(Finished::JeuDu10(_))));
    }

    #[test]
    fn malformed_tarot_events_name_the_field() {
        let table = Uuid::now_v7();
        let stream = format!("table-{table}");
        type Spoil = Box<dyn Fn(&mut tpb::GameFinished)>;
        fn tarot(m: &mut tpb::GameFinished) -> &mut tpb::TarotOptions {
            m.variant.as_mut().unwrap().tarot.as_mut().unwrap()
        }
        let cases: Vec<(&str, Spoil)> = vec![
            ("table_id", Box::new(|m| m.table_id = "x".into())),
            ("variant.tarot.seats", Box::new(|m| tarot(m).seats = 6)),
            ("variant.tarot.seats", Box::new(|m| tarot(m).seats = 2)),
            ("variant.tarot.rounds", Box::new(|m| tarot(m).rounds = 0)),
            ("variant.tarot.rounds", Box::new(|m| tarot(m).rounds = 11)),
            (
                "variant.deck",
                Box::new(|m| m.variant.as_mut().unwrap().deck = tpb::Deck::Dix as i32),
            ),
            (
                "variant.budget",
                Box::new(|m| m.variant.as_mut().unwrap().budget = Some(20)),
            ),
            ("players", Box::new(|m| tarot(m).seats = 5)),
            (
                "players",
                Box::new(|m| {
                    m.players.pop();
                }),
            ),
            ("players.seat", Box::new(|m| m.players[1].seat = 4)),
            ("players.seat", Box::new(|m| m.players[2].seat = 0)),
            (
                "players.player_id",
                Box::new(|m| m.players[0].player_id = "nope".into()),
            ),
            ("players.player_id", Box::new(|m| m.players[3].bot = true)),
            (
                "teams",
                Box::new(|m| {
                    m.teams.pop();
                }),
            ),
            ("teams.team", Box::new(|m| m.teams[0].team = 4)),
            ("teams.team", Box::new(|m| m.teams[1].team = 0)),
            ("teams.seats", Box::new(|m| m.teams[2].seats = vec![2, 3])),
            ("teams.seats", Box::new(|m| m.teams[2].seats = vec![1])),
            ("final_scores", Box::new(|m| m.final_scores.push(0))),
            (
                "final_scores",
                Box::new(|m| {
                    m.final_scores.pop();
                }),
            ),
            ("winner", Box::new(|m| m.winner = 0)),
            ("winner", Box::new(|m| m.winner = 9)),
            // Level first places: the winner is the first of them.
            ("winner", Box::new(|m| m.final_scores[0] = 270)),
        ];
        for (name, spoil) in cases {
            let mut message = finished_tarot(table, 4);
            spoil(&mut message);
            let err = read_game(&recorded(&stream, &message)).unwrap_err();
            assert!(
                matches!(&err, Malformed::Field { field, .. } if *field == name),
                "{name}: {err}"
            );
        }
        // The first of level first places is the winner.
        let mut level = finished_tarot(table, 4);
        level.final_scores[0] = 270;
        level.winner = 0;
        let Finished::Tarot(game) = read_game(&recorded(&stream, &level)).unwrap() else {
            panic!("not Tarot")
        };
        assert_eq!(game.placings(), vec![1, 1, 4, 3]);
        // A bot seat reads (the game is then not rated, in the domain).
        let mut bot = finished_tarot(table, 3);
        bot.players[2].player_id.clear();
        bot.players[2].bot = true;
        let Finished::Tarot(game) = read_game(&recorded(&stream, &bot)).unwrap() else {
            panic!("not Tarot")
        };
        assert_eq!(game.seats[2], Holder::Bot);
    }

    #[test]
    fn a_good_event_reads() {
        let table = Uuid::now_v7();
        let game = finished_game(&recorded(&format!("table-{table}"), &finished(table))).unwrap();
        assert_eq!(game.kind, GameKind::JeuDu10Ruff);
        assert_eq!(game.winner, 0);
        assert!(matches!(
            game.seats[3],
            Holder::Player {
                abandoned: true,
                ..
            }
        ));
    }

    #[test]
    fn malformed_events_name_the_field() {
        let table = Uuid::now_v7();
        let stream = format!("table-{table}");
        type Spoil = Box<dyn Fn(&mut tpb::GameFinished)>;
        let cases: Vec<(&str, Spoil)> = vec![
            ("table_id", Box::new(|m| m.table_id = "x".into())),
            (
                "table_id",
                Box::new(|m| m.table_id = Uuid::now_v7().to_string()),
            ),
            (
                "players",
                Box::new(|m| {
                    m.players.pop();
                }),
            ),
            ("players.seat", Box::new(|m| m.players[1].seat = 7)),
            ("players.seat", Box::new(|m| m.players[1].seat = 0)),
            (
                "players.player_id",
                Box::new(|m| m.players[1].player_id = "nope".into()),
            ),
            ("players.player_id", Box::new(|m| m.players[1].bot = true)),
            ("teams.seats", Box::new(|m| m.teams[0].seats = vec![0, 1])),
            ("teams.team", Box::new(|m| m.teams[0].team = 5)),
            ("winner", Box::new(|m| m.winner = 2)),
            (
                "variant.deck",
                Box::new(|m| m.variant.as_mut().unwrap().deck = 9),
            ),
        ];
        for (name, spoil) in cases {
            let mut message = finished(table);
            spoil(&mut message);
            let err = finished_game(&recorded(&stream, &message)).unwrap_err();
            assert!(
                matches!(&err, Malformed::Field { field, .. } if *field == name),
                "{name}: {err}"
            );
        }
        let mut garbage = recorded(&stream, &finished(table));
        garbage.payload = vec![0xff, 0xff, 0xff];
        assert!(matches!(finished_game(&garbage), Err(Malformed::Decode(_))));
    }
}
