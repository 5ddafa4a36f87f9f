//! The ledger's visibility rule: who may read an event's content, and from when. One place,
//! for every read path (inclusion proofs, game exports, any later one): the archive hands
//! content out only as a [`Disclosure`] this module decided.
//!
//! Threat model (docs/decisions.md, "Ledger visibility"): every caller of the ledger is
//! anyone on the internet, and knows every event id (ids are in logs, traces, NATS messages
//! and backups; the rule must not depend on their secrecy). They may ask for any event, at
//! any time, as often as they like, and compare leaves and proof nodes. So:
//!
//! - A game's **private** events (a seat's dealt cards, the dealing service's deal with its
//!   distribution number, the revealed seed; a tournament's boards and secret) are disclosed
//!   once the game finished (the table's `GameFinished`, the tournament's reveal), never
//!   before.
//! - A game's **public** events (moves, bids, scores, the commitment, the contributions)
//!   are disclosed at once, but while the game is in play without their chain link: an
//!   event's `prev_hash` is the hash of the event before it, which may be a private deal, and
//!   an unsalted hash of ten cards is found by trying all 847,660,528 hands.
//! - **Personal** events (accounts and logins, chat lines and moderation, single-player seed
//!   pairs and bets) are never disclosed by the ledger: each owning service serves its own
//!   data to its own readers under its own access control; the ledger proves that a leaf is
//!   in the log and that it was not changed, which needs no content. Some of them are
//!   **erasable**: a chat line (by a moderator's removal, or its author's account deletion)
//!   and every account event (by the account's deletion); their content is then erased for
//!   good (its salts and bytes deleted), their leaves stay.
//! - An event type no rule names (a newer service's) is withheld until one does: the rule
//!   fails closed. A test enumerates every event type of every service's proto and fails
//!   when one has no rule here.
//!
//! Pure: no IO. The ingest records each event's [`Subject`] (the game or the person it is
//! about) and applies the [`Effect`]s of the events that change what may be seen.

use fairdeal_eventstore::RecordedEvent;
use fairdeal_proto::fairdeal::auth::v1 as apb;
use fairdeal_proto::fairdeal::chat::v1 as chpb;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use prost::{Message, Name};

/// Who may read an event type's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Anyone, at once; without the chain link while its game (if any) is in play.
    Public,
    /// Anyone, once its game finished.
    Game,
    /// Nobody through the ledger. `erasable`: its content is erased by its subject's
    /// account deletion (and, for a chat line, by a moderator's removal).
    Personal {
        /// Whether an erasure reaches it.
        erasable: bool,
    },
    /// No rule names the type: nobody, until one does.
    Unknown,
}

/// Where an event type's subject is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubjectOf {
    /// No subject (a public event outside any game).
    Nothing,
    /// The game its stream belongs to (`table-<id>`, `commitmenttable-<id>`, `deals-<id>`,
    /// `tournament-<id>`).
    GameStream,
    /// The person its stream belongs to (`user-<id>`, `seedpair-<id>`, `outcomes-<id>`,
    /// `chatmute-<id>`).
    PersonStream,
    /// The chat line's author (`MessagePosted.author_id`).
    ChatAuthor,
    /// The moderator who removed a chat line (`MessageRemoved.moderator_id`).
    ChatModerator,
    /// The muted user (`UserMuted.user_id`).
    MutedUser,
}

/// One event type's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Who may read the content.
    pub class: Class,
    /// What the event is about.
    subject: SubjectOf,
}

const fn public(subject: SubjectOf) -> Rule {
    Rule {
        class: Class::Public,
        subject,
    }
}

const GAME: Rule = Rule {
    class: Class::Game,
    subject: SubjectOf::GameStream,
};

const fn personal(erasable: bool, subject: SubjectOf) -> Rule {
    Rule {
        class: Class::Personal { erasable },
        subject,
    }
}

const UNKNOWN: Rule = Rule {
    class: Class::Unknown,
    subject: SubjectOf::Nothing,
};

/// The rule table: every event type of every service, by its full protobuf name.
fn rules() -> [(String, Rule); 66] {
    use SubjectOf::{ChatAuthor, ChatModerator, GameStream, MutedUser, Nothing, PersonStream};
    let in_game = public(GameStream);
    let erasable_account = personal(true, PersonStream);
    let retained_person = personal(false, PersonStream);
    [
        // The tables service: one stream per table; only the dealt cards (a seat's, the
        // talon) are private.
        (tpb::TableCreated::full_name(), in_game),
        (tpb::SeatTaken::full_name(), in_game),
        (tpb::SeatLeft::full_name(), in_game),
        (tpb::SpectatorJoined::full_name(), in_game),
        (tpb::SpectatorLeft::full_name(), in_game),
        (tpb::SeedContributed::full_name(), in_game),
        (tpb::MatchStarted::full_name(), in_game),
        (tpb::HandStarted::full_name(), in_game),
        (tpb::CardsDealt::full_name(), GAME),
        (tpb::TalonDealt::full_name(), GAME),
        (tpb::BidPlaced::full_name(), in_game),
        (tpb::PlayerPassed::full_name(), in_game),
        (tpb::AuctionWon::full_name(), in_game),
        (tpb::TrumpNamed::full_name(), in_game),
        (tpb::CardPlayed::full_name(), in_game),
        (tpb::TrickWon::full_name(), in_game),
        (tpb::HandScored::full_name(), in_game),
        (tpb::MatchWon::full_name(), in_game),
        (tpb::GameFinished::full_name(), in_game),
        (tpb::TableExpired::full_name(), in_game),
        (tpb::TurnClock::full_name(), in_game),
        (tpb::TurnTimedOut::full_name(), in_game),
        (tpb::SeatAbandoned::full_name(), in_game),
        (tpb::TableSeedRevealed::full_name(), GAME),
        // French Tarot's own events: public as its rules show them, but for an écart's
        // plain card, which only the taker sees until the game is over.
        (tpb::TarotMatchStarted::full_name(), in_game),
        (tpb::TarotDealAnnulled::full_name(), in_game),
        (tpb::TarotBidPlaced::full_name(), in_game),
        (tpb::TarotPlayerPassed::full_name(), in_game),
        (tpb::TarotAuctionWon::full_name(), in_game),
        (tpb::TarotAllPassed::full_name(), in_game),
        (tpb::TarotKingCalled::full_name(), in_game),
        (tpb::TarotChienShown::full_name(), in_game),
        (tpb::TarotTrumpDiscarded::full_name(), in_game),
        (tpb::TarotCardDiscarded::full_name(), GAME),
        (tpb::TarotChelemDeclared::full_name(), in_game),
        (tpb::TarotPoigneeShown::full_name(), in_game),
        (tpb::TarotCardPlayed::full_name(), in_game),
        (tpb::TarotTrickWon::full_name(), in_game),
        (tpb::TarotDealScored::full_name(), in_game),
        (tpb::TarotMatchEnded::full_name(), in_game),
        // The commitment service: a table's or a tournament's commitments are public, its
        // seed and boards private until the end; a player's seed pairs and bets personal
        // (kept: a bet's record stands, and holds no personal text).
        (cpb::TableCommitmentPublished::full_name(), in_game),
        (cpb::SeedContributed::full_name(), in_game),
        (cpb::DelayedValueBound::full_name(), in_game),
        // A drand round that could not be fetched in time, and the fallback bound instead:
        // public, like the commitment that fixed both.
        (cpb::DrandRoundStalled::full_name(), in_game),
        (cpb::ClientSeedFixed::full_name(), in_game),
        (cpb::TableSeedRevealed::full_name(), GAME),
        (cpb::SeedPairCommitted::full_name(), retained_person),
        (cpb::ClientSeedChanged::full_name(), retained_person),
        (cpb::BetNonceConsumed::full_name(), retained_person),
        (cpb::SeedPairRotated::full_name(), retained_person),
        (cpb::TournamentCommitted::full_name(), in_game),
        (cpb::BoardsGenerated::full_name(), GAME),
        (cpb::TournamentRevealed::full_name(), GAME),
        // The dealing service: a hand's deal (its distribution number fixes all four hands).
        (dpb::HandDealt::full_name(), GAME),
        (dpb::OutcomeIssued::full_name(), retained_person),
        // The rating service: public, as the leaderboards are; its streams hold nothing
        // private, so their chain links are public too.
        (rpb::RatingChanged::full_name(), public(Nothing)),
        // The chat service: personal. A line is erasable; moderation records are kept.
        (chpb::MessagePosted::full_name(), personal(true, ChatAuthor)),
        (
            chpb::MessageRemoved::full_name(),
            personal(false, ChatModerator),
        ),
        (chpb::UserMuted::full_name(), personal(false, MutedUser)),
        // The auth service: personal, all erased with the account.
        (apb::UserRegistered::full_name(), erasable_account),
        (apb::EmailConfirmed::full_name(), erasable_account),
        (apb::LoggedIn::full_name(), erasable_account),
        (apb::RefreshFamilyRevoked::full_name(), erasable_account),
        (apb::PasswordChanged::full_name(), erasable_account),
        (apb::PasswordResetRequested::full_name(), erasable_account),
        (apb::AccountDeleted::full_name(), erasable_account),
    ]
}

/// The message types in the services' event protos that are parts of events (the types of
/// their fields), not event types: the completeness test tells the two apart with this.
pub fn event_parts() -> Vec<String> {
    vec![
        tpb::TableOptions::full_name(),
        tpb::Bid::full_name(),
        tpb::CommandRef::full_name(),
        tpb::Turn::full_name(),
        tpb::SeatPlayer::full_name(),
        tpb::TeamSeats::full_name(),
        rpb::Opponent::full_name(),
    ]
}

/// The rule of `event_type` ([`Class::Unknown`] when none names it).
pub fn rule(event_type: &str) -> Rule {
    static TABLE: std::sync::OnceLock<std::collections::HashMap<String, Rule>> =
        std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| rules().into_iter().collect());
    table.get(event_type).copied().unwrap_or(UNKNOWN)
}

/// Every event type a rule names (for the completeness test and the docs).
pub fn ruled_types() -> Vec<String> {
    rules().into_iter().map(|(name, _)| name).collect()
}

/// The event types an erasure reaches.
pub fn erasable_types() -> Vec<String> {
    ruled_types()
        .into_iter()
        .filter(|t| matches!(rule(t).class, Class::Personal { erasable: true }))
        .collect()
}

/// What an event is about, as the archive records it: `table:<id>`, `tournament:<id>` (a
/// game) or `user:<id>` (a person).
pub type Subject = String;

/// The game a stream belongs to.
fn game_of_stream(stream: &str) -> Option<Subject> {
    [
        ("table-", "table"),
        ("commitmenttable-", "table"),
        ("deals-", "table"),
        ("tournament-", "tournament"),
    ]
    .into_iter()
    .find_map(|(prefix, kind)| {
        stream
            .strip_prefix(prefix)
            .filter(|id| !id.is_empty())
            .map(|id| format!("{kind}:{id}"))
    })
}

/// The person a stream belongs to.
fn person_of_stream(stream: &str) -> Option<Subject> {
    ["user-", "seedpair-", "outcomes-", "chatmute-"]
        .into_iter()
        .find_map(|prefix| stream.strip_prefix(prefix).filter(|id| !id.is_empty()))
        .map(user)
}

/// The subject of a person by their id.
pub fn user(id: &str) -> Subject {
    format!("user:{id}")
}

/// A payload field of `M`, when the payload decodes and the field is not empty.
fn field<M: Message + Default>(event: &RecordedEvent, get: fn(M) -> String) -> Option<String> {
    M::decode(event.payload.as_slice())
        .ok()
        .map(get)
        .filter(|s| !s.is_empty())
}

/// The subject of `event` under its rule (`None`: none, or none readable).
pub fn subject(event: &RecordedEvent) -> Option<Subject> {
    let stream = event.stream_id.as_str();
    match rule(&event.event_type).subject {
        SubjectOf::Nothing => None,
        SubjectOf::GameStream => game_of_stream(stream),
        SubjectOf::PersonStream => person_of_stream(stream),
        SubjectOf::ChatAuthor => {
            field(event, |m: chpb::MessagePosted| m.author_id).map(|id| user(&id))
        }
        SubjectOf::ChatModerator => {
            field(event, |m: chpb::MessageRemoved| m.moderator_id).map(|id| user(&id))
        }
        SubjectOf::MutedUser => field(event, |m: chpb::UserMuted| m.user_id).map(|id| user(&id)),
    }
}

/// What an event changes in what may be seen, applied as it is ingested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// The game finished (or its table expired): its private events and chain links may be
    /// seen from now on.
    Finish(Subject),
    /// Erase one event's content (a moderator removed a chat line: the line's event id).
    EraseEvent(String),
    /// Erase every erasable event of a person (their account was deleted).
    EraseSubject(Subject),
}

/// Whether an event of `event_type`, in its table's own stream, ends the game: a
/// `GameFinished`, or a `TableExpired` (the table reached its latest end, after which its
/// timelocked seed is anyone's). Its private events may be seen from then on, and it may
/// be exported once whole.
pub fn ends_game(event_type: &str) -> bool {
    fairdeal_eventstore::is_event_type::<tpb::GameFinished>(event_type)
        || fairdeal_eventstore::is_event_type::<tpb::TableExpired>(event_type)
}

/// The effect of `event`, if it has one. A `GameFinished` (or a `TableExpired`: the table
/// reached its latest end, after which its timelocked seed is anyone's) counts only in its
/// table's own stream, so no other stream can finish a game.
pub fn effect(event: &RecordedEvent) -> Option<Effect> {
    let stream = event.stream_id.as_str();
    if ends_game(&event.event_type) && stream.starts_with("table-") {
        return game_of_stream(stream).map(Effect::Finish);
    }
    if event.is::<cpb::TournamentRevealed>() && stream.starts_with("tournament-") {
        return game_of_stream(stream).map(Effect::Finish);
    }
    if event.is::<chpb::MessageRemoved>() {
        return field(event, |m: chpb::MessageRemoved| m.message_id).map(Effect::EraseEvent);
    }
    if event.is::<apb::AccountDeleted>() && stream.starts_with("user-") {
        return person_of_stream(stream).map(Effect::EraseSubject);
    }
    None
}

/// What a reader may see of one archived event: the export format's own values, so that the
/// ledger and the auditor name them alike.
pub use fairdeal_tlog::export::Disclosure;

/// What a reader may see of an archived event of `event_type` about `subject`, given whether
/// that subject (a game) finished and whether the content was erased.
pub fn disclose(
    event_type: &str,
    subject: Option<&str>,
    finished: bool,
    erased: bool,
) -> Disclosure {
    if erased {
        return Disclosure::Erased;
    }
    match rule(event_type).class {
        Class::Public if subject.is_none() || finished => Disclosure::Full,
        Class::Public => Disclosure::Body,
        Class::Game if finished && subject.is_some() => Disclosure::Full,
        Class::Game => Disclosure::WithheldGame,
        Class::Personal { .. } => Disclosure::WithheldPersonal,
        Class::Unknown => Disclosure::WithheldUnknown,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeSet;

    use super::*;
    use fairdeal_eventstore::{GENESIS_PREV_HASH, NewEvent, StreamId};
    use prost_types::FileDescriptorSet;

    /// Every message declared in a service's `events.proto` (or a game's
    /// `<game>_events.proto`), by full name.
    fn messages_of_events_protos() -> BTreeSet<String> {
        let set = FileDescriptorSet::decode(fairdeal_proto::FILE_DESCRIPTOR_SET).unwrap();
        let mut names = BTreeSet::new();
        for file in set.file {
            let name = file.name();
            // `events.proto`, and a game's own events beside it (`tarot_events.proto`).
            if !(name.starts_with("fairdeal/") && name.ends_with("events.proto")) {
                continue;
            }
            for message in &file.message_type {
                names.insert(format!("{}.{}", file.package(), message.name()));
            }
        }
        names
    }

    #[test]
    fn every_event_type_of_every_service_has_a_rule() {
        let declared = messages_of_events_protos();
        assert!(declared.len() > 40, "{declared:?}");
        let parts: BTreeSet<String> = event_parts().into_iter().collect();
        let ruled: BTreeSet<String> = ruled_types().into_iter().collect();
        let events: BTreeSet<String> = declared.difference(&parts).cloned().collect();
        let missing: Vec<_> = events.difference(&ruled).collect();
        assert!(
            missing.is_empty(),
            "event types without a visibility rule (add them to visibility::rules): {missing:?}"
        );
        let stale: Vec<_> = ruled.difference(&events).collect();
        assert!(
            stale.is_empty(),
            "rules for types no proto declares: {stale:?}"
        );
        for part in &parts {
            assert!(declared.contains(part), "{part} is not in an events.proto");
            assert_eq!(
                rule(part).class,
                Class::Unknown,
                "{part} is a part, not an event"
            );
        }
        for t in &events {
            assert_ne!(rule(t).class, Class::Unknown, "{t}");
        }
    }

    fn event(stream: &str, type_name: String, payload: Vec<u8>) -> RecordedEvent {
        let stream = StreamId::parse(stream).unwrap();
        fairdeal_event::seal(
            &stream,
            1,
            &GENESIS_PREV_HASH,
            NewEvent::new(type_name, payload),
        )
        .unwrap()
    }

    #[test]
    fn a_games_private_events_wait_for_its_end_and_its_public_ones_for_their_link() {
        let table = "table:0190b6a2-7c1e-7d4a-9f0b-2c5d8e9f1a2b";
        let dealt = tpb::CardsDealt::full_name();
        let played = tpb::CardPlayed::full_name();
        for private in [
            dealt.clone(),
            tpb::TalonDealt::full_name(),
            dpb::HandDealt::full_name(),
            cpb::TableSeedRevealed::full_name(),
        ] {
            assert_eq!(
                disclose(&private, Some(table), false, false),
                Disclosure::WithheldGame
            );
            assert_eq!(
                disclose(&private, Some(table), true, false),
                Disclosure::Full
            );
            // Without a game to finish, never.
            assert_eq!(
                disclose(&private, None, true, false),
                Disclosure::WithheldGame
            );
        }
        assert_eq!(
            disclose(&played, Some(table), false, false),
            Disclosure::Body
        );
        assert_eq!(
            disclose(&played, Some(table), true, false),
            Disclosure::Full
        );
        let rated = rpb::RatingChanged::full_name();
        assert_eq!(disclose(&rated, None, false, false), Disclosure::Full);
        for person in [
            chpb::MessagePosted::full_name(),
            apb::LoggedIn::full_name(),
            cpb::BetNonceConsumed::full_name(),
        ] {
            assert_eq!(
                disclose(&person, Some("user:1"), true, false),
                Disclosure::WithheldPersonal
            );
            assert_eq!(
                disclose(&person, Some("user:1"), true, true),
                Disclosure::Erased
            );
        }
        assert_eq!(
            disclose("x.v1.New", None, true, false),
            Disclosure::WithheldUnknown
        );
    }

    #[test]
    fn subjects_and_effects() {
        let id = "0190b6a2-7c1e-7d4a-9f0b-2c5d8e9f1a2b";
        let dealt = event(&format!("table-{id}"), tpb::CardsDealt::full_name(), vec![]);
        assert_eq!(subject(&dealt), Some(format!("table:{id}")));
        let deal = event(&format!("deals-{id}"), dpb::HandDealt::full_name(), vec![]);
        assert_eq!(subject(&deal), Some(format!("table:{id}")));
        let line = chpb::MessagePosted {
            channel: format!("table-{id}"),
            author_id: "a1".into(),
            ..Default::default()
        };
        let posted = event(
            &format!("chat-table-{id}"),
            chpb::MessagePosted::full_name(),
            line.encode_to_vec(),
        );
        assert_eq!(subject(&posted), Some("user:a1".into()));
        let login = event("user-u7", apb::LoggedIn::full_name(), vec![]);
        assert_eq!(subject(&login), Some("user:u7".into()));
        let rated = event("rating-p1", rpb::RatingChanged::full_name(), vec![]);
        assert_eq!(subject(&rated), None);

        let finished = event(
            &format!("table-{id}"),
            tpb::GameFinished::full_name(),
            vec![],
        );
        assert_eq!(
            effect(&finished),
            Some(Effect::Finish(format!("table:{id}")))
        );
        // A GameFinished outside its table's stream finishes nothing.
        let forged = event(
            &format!("chat-table-{id}"),
            tpb::GameFinished::full_name(),
            vec![],
        );
        assert_eq!(effect(&forged), None);
        // A table that reached its latest end is over as a finished one is; elsewhere, no.
        let expired = event(
            &format!("table-{id}"),
            tpb::TableExpired::full_name(),
            vec![],
        );
        assert_eq!(
            effect(&expired),
            Some(Effect::Finish(format!("table:{id}")))
        );
        let forged = event(
            &format!("deals-{id}"),
            tpb::TableExpired::full_name(),
            vec![],
        );
        assert_eq!(effect(&forged), None);
        let removed = chpb::MessageRemoved {
            message_id: "m1".into(),
            ..Default::default()
        };
        let removal = event(
            "chat-lobby",
            chpb::MessageRemoved::full_name(),
            removed.encode_to_vec(),
        );
        assert_eq!(effect(&removal), Some(Effect::EraseEvent("m1".into())));
        let deleted = event("user-u7", apb::AccountDeleted::full_name(), vec![]);
        assert_eq!(
            effect(&deleted),
            Some(Effect::EraseSubject("user:u7".into()))
        );
        assert_eq!(effect(&login), None);
        assert!(erasable_types().contains(&chpb::MessagePosted::full_name()));
        assert!(!erasable_types().contains(&chpb::MessageRemoved::full_name()));
    }
}
