//! A table as one caller sees it (`GetTable`): the engine's seat view for a seated player
//! (its own hand and legal moves), its public view for anyone else. Never another seat's
//! hand: the engine's views hold none.

use fairdeal_games::view::SeatBid;
use fairdeal_games::{Call, Command, Phase, PublicView, Seat};
use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::domain::{Table, Viewer};
use crate::events::{bid_message, card_codes, hand_score_message, options_message, suit_message};

fn seat_u32(seat: Seat) -> u32 {
    u32::from(seat.number())
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::NotStarted => "not_started",
        Phase::AwaitingDeal => "awaiting_deal",
        Phase::Auction => "auction",
        Phase::NamingTrump => "naming_trump",
        Phase::Playing => "playing",
        Phase::Finished => "finished",
    }
}

fn seat_bid(bid: Option<SeatBid>) -> Option<pb::AuctionCall> {
    bid.map(|b| pb::AuctionCall {
        seat: seat_u32(b.seat),
        bid: Some(bid_message(b.bid)),
    })
}

fn legal_action(command: &Command) -> Option<pb::LegalAction> {
    use pb::legal_action::Action;
    let action = match command {
        Command::Bid { bid } => Action::Bid(bid_message(*bid)),
        Command::Pass => Action::Pass(pb::PassAction {}),
        Command::NameTrump { suit } => Action::NameTrump(suit_message(*suit) as i32),
        Command::PlayCard { card } => Action::PlayCard(card.to_string()),
        Command::StartMatch { .. } | Command::StartHand { .. } => return None,
    };
    Some(pb::LegalAction {
        action: Some(action),
    })
}

fn game_view(public: &PublicView) -> pb::GameView {
    let hand_count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    pb::GameView {
        phase: phase_name(public.phase).to_owned(),
        scores: public.scores.to_vec(),
        budgets: public.budgets.to_vec(),
        hand: public.hand,
        dealer: public.dealer.map(seat_u32),
        turn: public.turn.map(seat_u32),
        card_counts: public.card_counts.iter().map(|n| hand_count(*n)).collect(),
        auction: public
            .auction
            .iter()
            .map(|c| pb::AuctionCall {
                seat: seat_u32(c.seat),
                bid: match c.call {
                    Call::Bid(bid) => Some(bid_message(bid)),
                    Call::Pass => None,
                },
            })
            .collect(),
        highest_bid: seat_bid(public.highest_bid),
        contract: seat_bid(public.contract),
        trump: public
            .trump
            .map_or(pb::Suit::Unspecified, suit_message)
            .into(),
        trick: public
            .trick
            .iter()
            .map(|p| pb::PlayedCard {
                seat: seat_u32(p.seat),
                card: p.card.to_string(),
            })
            .collect(),
        tricks_played: hand_count(public.tricks.len()),
        tricks: public
            .tricks
            .iter()
            .map(|t| pb::Trick {
                cards: t
                    .cards
                    .iter()
                    .map(|p| pb::PlayedCard {
                        seat: seat_u32(p.seat),
                        card: p.card.to_string(),
                    })
                    .collect(),
                winner: seat_u32(t.winner),
                points: u32::from(t.points),
            })
            .collect(),
        target: public.target.unwrap_or_default(),
        trick_points: public.trick_points.to_vec(),
        last_score: public
            .last_score
            .as_ref()
            .map(|s| hand_score_message("", s)),
        winner: public.result.map(|r| r.team.index() as u32),
        my_seat: None,
        my_hand: Vec::new(),
        legal: Vec::new(),
    }
}

/// The view of `table` for `viewer`, who `spectating` or not.
pub fn table_view(table: &Table, viewer: Viewer, spectating: bool) -> pb::TableView {
    let game = match viewer {
        Viewer::Seat(seat) => {
            let seen = table.game.seat_view(seat);
            let mut view = game_view(&seen.table);
            view.my_seat = Some(seat_u32(seat));
            view.my_hand = card_codes(&seen.hand);
            view.legal = seen.legal.iter().filter_map(legal_action).collect();
            view
        }
        Viewer::Spectator => game_view(&table.game.public_view()),
    };
    let status = if table.finished.is_some() {
        pb::TableStatus::Finished
    } else if table.started() {
        pb::TableStatus::Playing
    } else {
        pb::TableStatus::Open
    };
    pb::TableView {
        table_id: table.id().to_string(),
        version: table.version,
        status: status.into(),
        options: Some(options_message(&table.created.options)),
        move_seconds: table.created.move_seconds,
        seats: Seat::ALL
            .into_iter()
            .map(|s| pb::SeatInfo {
                seat: seat_u32(s),
                player_id: table.players[s.index()]
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                bot: table.created.bots[s.index()],
                contributed: table.contributed[s.index()],
                timeouts: table.timeouts[s.index()],
                abandoned: table.abandoned[s.index()],
            })
            .collect(),
        commitment: table.created.commitment.clone(),
        short_code: table.created.short_code.clone(),
        client_seed: table.client_seed.clone().unwrap_or_default(),
        server_seed: table.server_seed.clone().unwrap_or_default(),
        game: Some(game),
        turn_deadline_ms: table.deadline.map(|(_, deadline)| deadline),
        spectators: u32::try_from(table.spectators.len()).unwrap_or(u32::MAX),
        spectating,
    }
}
