//! Wire <-> domain: the tables' `GameFinished` into a [`FinishedGame`] (re-validated: a
//! malformed one is refused with the field at fault), and a [`SeatChange`] into the
//! `RatingChanged` the service records.

use fairdeal_eventstore::RecordedEvent;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use uuid::Uuid;

use crate::domain::{FinishedGame, GameKind, Holder, SeatChange};

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

/// The finished game `event` records (a `fairdeal.tables.v1.GameFinished` of stream
/// `table-<uuid>` whose correlation id is the table id).
pub fn finished_game(event: &RecordedEvent) -> Result<FinishedGame, Malformed> {
    let message: tpb::GameFinished = event
        .decode_payload()
        .map_err(|e| Malformed::Decode(e.to_string()))?;
    let table_id =
        Uuid::parse_str(&message.table_id).map_err(|_| field("table_id", "not a UUID"))?;
    if event.stream_id.as_str() != format!("table-{table_id}") {
        return Err(field("table_id", "is not the table of the event's stream"));
    }
    if message.players.len() != 4 {
        return Err(field(
            "players",
            format!("{} entries, expected 4", message.players.len()),
        ));
    }
    let mut seats = [Holder::Bot; 4];
    let mut seen = [false; 4];
    for player in &message.players {
        let seat = usize::try_from(player.seat)
            .ok()
            .filter(|s| *s < 4)
            .ok_or_else(|| field("players.seat", format!("{} is not 0..3", player.seat)))?;
        if std::mem::replace(&mut seen[seat], true) {
            return Err(field("players.seat", format!("seat {seat} twice")));
        }
        seats[seat] = match (player.bot, player.player_id.as_str()) {
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
        };
    }
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

/// The `RatingChanged` recording `seat` of `game`; `games_played` counts this game.
pub fn rating_changed(
    game: &FinishedGame,
    seat: &SeatChange,
    games_played: u32,
) -> rpb::RatingChanged {
    let c = &seat.change;
    let weights = c.weights();
    rpb::RatingChanged {
        player_id: seat.player.to_string(),
        table_id: game.table_id.to_string(),
        game_kind: game.kind.as_str().to_owned(),
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
