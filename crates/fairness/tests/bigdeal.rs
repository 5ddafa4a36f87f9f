//! BigDeal and SquareDeal compatibility: edge deals, rank/unrank bijection, BigDeal's own
//! decoding algorithm, and the official boards of the World Bridge Games 2024 (Buenos
//! Aires), published by the WBF with their SquareDeal files (`tests/golden/wbg2024/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_fairness::bigdeal::{
    self, Board, BridgeDeal, DEAL_COUNT, DealNumber, HAND_LEN, Seat, Seed,
};
use fairdeal_fairness::squaredeal::{
    self, KeyFile, SetKind, SqdError, SqdLineProblem, SqkLineProblem, Tournament, VerifyError,
};
use proptest::prelude::*;

const SQD: &[u8] = include_bytes!("golden/wbg2024/WBG2024.sqd");
const SQK: &[u8] = include_bytes!("golden/wbg2024/WBG2024.sqk");
const OPRR01_PBN: &str = include_str!("golden/wbg2024/OPRR01.pbn");
const OPRR01_GOE: &str = include_str!("golden/wbg2024/OPRR01.goe");
const DEALS: &str = include_str!("golden/wbg2024/deals.txt");
const BIGDEALX: &str = include_str!("golden/bigdealx.txt");

fn codes(deal: &BridgeDeal, seat: Seat) -> Vec<&'static str> {
    deal.hand(seat)
        .iter()
        .map(|&c| bigdeal::card_code(c))
        .collect()
}

#[test]
fn deal_zero_gives_each_hand_one_suit_in_order() {
    let deal = BridgeDeal::from_number(DealNumber::MIN);
    assert_eq!(
        deal.pbn(),
        "N:AKQJT98765432... .AKQJT98765432.. ..AKQJT98765432. ...AKQJT98765432"
    );
    assert_eq!(deal.number(), DealNumber::MIN);
}

#[test]
fn the_last_deal_gives_the_suits_in_reverse() {
    // g = N-1: every hand takes the last cards among those left.
    let deal = BridgeDeal::from_number(DealNumber::MAX);
    assert_eq!(
        deal.pbn(),
        "N:...AKQJT98765432 ..AKQJT98765432. .AKQJT98765432.. AKQJT98765432..."
    );
    assert_eq!(deal.number(), DealNumber::MAX);
    assert_eq!(DealNumber::MAX.get(), DEAL_COUNT - 1);
    assert!(DealNumber::new(DEAL_COUNT).is_err());
}

#[test]
fn neighbouring_numbers_move_souths_last_cards() {
    // g = 1: South's rank is 1, the next subset after the diamonds: 2D out, AC in.
    let deal = BridgeDeal::from_number(DealNumber::new(1).unwrap());
    assert_eq!(codes(&deal, Seat::South).last(), Some(&"AC"));
    assert!(!codes(&deal, Seat::South).contains(&"2D"));
    assert!(codes(&deal, Seat::West).contains(&"2D"));
}

/// BigDeal's `code_to_hand` (binomial.c) and `cnv_int_byh` (output.c), transcribed with
/// its skip counts and repeated subtraction, as an independent check of the fast decoder.
fn bigdeal_code_to_hand(g: u128) -> [[u8; HAND_LEN]; 4] {
    fn n_over_k(n: i64, k: i64) -> u128 {
        if n < 0 || k < 0 || k > n {
            return 0;
        }
        (0..k).fold(1u128, |acc, i| acc * (n - i) as u128 / (i + 1) as u128)
    }
    let mut g = g;
    let mut skips = [[0i64; HAND_LEN]; 4];
    for compass in 0..4i64 {
        let mut c = 1u128;
        for i in 2..=(3 - compass) {
            c *= n_over_k(i * 13, 13);
        }
        let mut a = 0i64;
        for j in 0..13i64 {
            let m = 13 * (4 - compass);
            let tmp1 = n_over_k(m - a - j, 13 - j);
            let mut b = a;
            loop {
                let tmp2 = (tmp1 - n_over_k(m - b - 1 - j, 13 - j)) * c;
                if tmp2 > g {
                    break;
                }
                b += 1;
            }
            g -= (tmp1 - n_over_k(m - b - j, 13 - j)) * c;
            skips[compass as usize][j as usize] = b;
            a = b;
        }
    }
    // cnv_int_byh: walk a linked list of the cards left, skipping as told.
    let mut left: Vec<u8> = (0..52).collect();
    let mut hands = [[0u8; HAND_LEN]; 4];
    for compass in 0..4 {
        let mut position = 0usize;
        let mut previous = 0i64;
        for i in 0..HAND_LEN {
            let skip = skips[compass][i] - if i == 0 { 0 } else { previous };
            previous = skips[compass][i];
            position += skip as usize;
            hands[compass][i] = left.remove(position);
        }
    }
    hands
}

fn deal_number() -> impl Strategy<Value = DealNumber> {
    (0..DEAL_COUNT).prop_map(|g| DealNumber::new(g).unwrap())
}

proptest! {
    #[test]
    fn number_to_deal_to_number_is_the_identity(number in deal_number()) {
        let deal = BridgeDeal::from_number(number);
        prop_assert_eq!(deal.number(), number);
        // Every card exactly once, hands ascending.
        prop_assert_eq!(BridgeDeal::from_hands(*deal.hands()), Ok(deal));
    }

    #[test]
    fn deal_to_number_to_deal_is_the_identity(cards in Just((0u8..52).collect::<Vec<u8>>()).prop_shuffle()) {
        let mut hands = [[0u8; HAND_LEN]; 4];
        for (i, card) in cards.into_iter().enumerate() {
            hands[i / HAND_LEN][i % HAND_LEN] = card;
        }
        let deal = BridgeDeal::from_hands(hands).unwrap();
        prop_assert_eq!(BridgeDeal::from_number(deal.number()), deal);
        prop_assert_eq!(BridgeDeal::from_pbn(&deal.pbn()).unwrap(), deal);
    }

    #[test]
    fn the_decoder_agrees_with_bigdeals_algorithm(number in deal_number()) {
        let deal = BridgeDeal::from_number(number);
        prop_assert_eq!(*deal.hands(), bigdeal_code_to_hand(number.get()));
    }
}

#[test]
fn the_edges_agree_with_bigdeals_algorithm() {
    for g in [0, 1, 2, DEAL_COUNT / 2, DEAL_COUNT - 2, DEAL_COUNT - 1] {
        let number = DealNumber::new(g).unwrap();
        assert_eq!(
            *BridgeDeal::from_number(number).hands(),
            bigdeal_code_to_hand(g),
            "g = {g}"
        );
    }
}

#[test]
fn candidates_at_or_above_n_are_skipped() {
    let seed = Seed::new(b"entropy", b"owner");
    let mut numbers = seed.deal_numbers();
    let mut kept = Vec::new();
    for _ in 0..50 {
        kept.push(numbers.next().unwrap());
    }
    let used = numbers.last_seq();
    let expected: Vec<DealNumber> = (1..=used)
        .filter_map(|seq| DealNumber::new(seed.candidate(seq)).ok())
        .collect();
    assert_eq!(kept, expected);
    // About 32% of 96-bit candidates are at least N.
    assert!(used > 50, "no candidate was rejected in {used} steps");
}

fn official() -> (Tournament, KeyFile) {
    (
        Tournament::parse(SQD).expect("WBG2024.sqd"),
        KeyFile::parse(SQK).expect("WBG2024.sqk"),
    )
}

#[test]
fn the_official_key_file_matches_its_published_hash() {
    let (tournament, keys) = official();
    assert_eq!(
        tournament.key_hash.unwrap().to_string(),
        "bd4a46bea10ad8d20abd580f6be8869ef7772191ee9f6851cb1ab25df52a573e"
    );
    let verified = squaredeal::verify(&tournament, &keys).expect("verifies");
    assert!(keys.is_exact_crlf());
    assert_eq!(keys.len(), 90);
    assert!(verified.warnings().is_empty());
    assert_eq!(tournament.name, "World Bridge Games 2024");
    assert_eq!(tournament.delayed_value.as_deref(), Some("43275.91"));
    assert_eq!(tournament.phases.len(), 7);
}

#[test]
fn open_round_robin_session_1_is_byte_identical_to_bigdeals_pbn() {
    let (tournament, keys) = official();
    let verified = squaredeal::verify(&tournament, &keys).unwrap();
    let session = verified.make(1, 1, SetKind::Original, None).unwrap();
    assert_eq!(session.session.file_prefix, "OPRR01");
    assert_eq!(session.session.description, "Open Round Robin 1/17");
    // An empty event gives BigDeal's "?": with BigDeal's generator line the file is the
    // one BigDeal wrote.
    let mut pbn = bigdeal::pbn_header("Big Deal version 2.0");
    for board in &session.boards {
        board.write_pbn("", &mut pbn);
    }
    assert_eq!(pbn, OPRR01_PBN);
    // And BigDeal's own Gödel numbers (its .goe output) are the deal numbers.
    let goe: Vec<DealNumber> = OPRR01_GOE.lines().map(|l| l.parse().unwrap()).collect();
    let ours: Vec<DealNumber> = session.boards.iter().map(|b| b.deal_number).collect();
    assert_eq!(ours, goe);
}

#[test]
fn other_official_sessions_match_cycled_ranges() {
    let (tournament, keys) = official();
    let verified = squaredeal::verify(&tournament, &keys).unwrap();
    let mut checked = 0;
    for line in DEALS.lines().filter(|l| !l.starts_with('#')) {
        let (numbers, deal) = line.split_at(line.find("N:").unwrap());
        let numbers: Vec<u32> = numbers
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        let [phase, session, board] = numbers[..] else {
            panic!("bad line {line}")
        };
        let made = verified
            .make(phase, session, SetKind::Original, None)
            .unwrap();
        let found = made.boards.iter().find(|b| b.number == board).unwrap();
        assert_eq!(
            found.deal.pbn(),
            deal.trim(),
            "phase {phase} session {session} board {board}"
        );
        checked += 1;
    }
    assert_eq!(checked, 14);
    // R16 has 20 boards a session, numbered 1-20 in every session.
    let r16 = verified.make(4, 2, SetKind::Original, None).unwrap();
    assert_eq!(r16.boards.len(), 20);
    assert_eq!(r16.session.file_prefix, "R162");
}

#[test]
fn reserve_sets_differ_from_the_originals() {
    let (tournament, keys) = official();
    let verified = squaredeal::verify(&tournament, &keys).unwrap();
    let original = verified.make(1, 2, SetKind::Original, None).unwrap();
    let reserve = verified.make(1, 2, SetKind::Reserve, None).unwrap();
    assert_eq!(reserve.session.file_prefix, "OPRR02reserve");
    assert_eq!(original.boards.first().map(|b| b.number), Some(17));
    assert_eq!(reserve.boards.first().map(|b| b.number), Some(17));
    assert_ne!(original.boards, reserve.boards);
    // BigDeal itself, given squaredeal's arguments for this reserve set, made the same.
    let from_bigdeal: Vec<&str> = BIGDEALX
        .lines()
        .skip_while(|l| !l.ends_with("reserve\t17-32"))
        .skip(1)
        .take(16)
        .collect();
    let ours: Vec<String> = reserve
        .boards
        .iter()
        .map(|b| format!("{} {} {}", b.number, b.deal_number, b.deal.pbn()))
        .collect();
    assert_eq!(ours, from_bigdeal);
}

/// Boards made by BigDeal itself (its core files built outside the repository, run as
/// `bigdealx -W <owner> -e <entropy> -n <boards>`): cases the tournament files do not
/// cover, such as an owner longer than one RIPEMD block.
#[test]
fn boards_match_bigdeals_own_output() {
    let mut cases = 0;
    let mut lines = BIGDEALX
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    while let Some(header) = lines.next() {
        // "owner<TAB>entropy<TAB>first-last", then one "board g deal" line per board.
        let fields: Vec<&str> = header.split('\t').collect();
        let [owner, entropy, range] = fields[..] else {
            panic!("bad case header {header:?}")
        };
        let (first, last) = range.split_once('-').unwrap();
        let (first, last): (u32, u32) = (first.parse().unwrap(), last.parse().unwrap());
        let seed = Seed::new(entropy.as_bytes(), owner.as_bytes());
        for board in bigdeal::boards(&seed, first, last - first + 1) {
            let line = lines.next().unwrap();
            let mut parts = line.splitn(3, ' ');
            assert_eq!(parts.next(), Some(board.number.to_string().as_str()));
            assert_eq!(parts.next(), Some(board.deal_number.to_string().as_str()));
            assert_eq!(parts.next(), Some(board.deal.pbn().as_str()), "{header}");
        }
        cases += 1;
    }
    assert!(cases >= 4, "only {cases} cases");
}

#[test]
fn a_changed_key_file_is_refused() {
    let (tournament, _) = official();
    let mut forged = SQK.to_vec();
    // Change one key character of session 1,1 (after "1,1:").
    forged[4] = if forged[4] == b'a' { b'b' } else { b'a' };
    let keys = KeyFile::parse(&forged).unwrap();
    match squaredeal::verify(&tournament, &keys) {
        Err(VerifyError::KeyHashMismatch { described, actual }) => {
            assert_eq!(described, tournament.key_hash.unwrap());
            assert_ne!(actual, described);
        }
        other => panic!("expected a key hash mismatch, got {other:?}"),
    }
}

#[test]
fn lf_line_ends_still_verify_as_with_squaredeal() {
    let (tournament, _) = official();
    let lf: Vec<u8> = SQK.iter().copied().filter(|&b| b != b'\r').collect();
    let keys = KeyFile::parse(&lf).unwrap();
    let verified = squaredeal::verify(&tournament, &keys).unwrap();
    assert!(!keys.is_exact_crlf());
    assert_eq!(verified.warnings().len(), 1);
}

#[test]
fn malformed_files_name_the_line() {
    let sqd = b"TN x\nDI y\nSN 2:1-16:rr#:d\nXX what\n";
    assert_eq!(
        Tournament::parse(sqd),
        Err(SqdError::Line {
            line: 4,
            problem: SqdLineProblem::UnknownTag("XX what".into())
        })
    );
    let err = Tournament::parse(b"TN x\nDI y\nSN 2:5-3:rr#:d\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 3: SN: boards: \"5-3\" is a decreasing range"
    );
    let err = Tournament::parse(b"TN x\nTN y\nDI y\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 2: second TN line (the first is line 1)"
    );
    let err = Tournament::parse(b"TN x\nDI y\nKH 12\n").unwrap_err();
    assert!(err.to_string().starts_with("line 3: KH: key hash \"12\""));
    assert_eq!(
        Tournament::parse(b"DI y\n"),
        Err(SqdError::Missing("TN (tournament name)"))
    );

    let err = KeyFile::parse(b"1,1:abc\r\n1-2:def\r\n").unwrap_err();
    assert_eq!(err.line, 2);
    assert_eq!(err.problem, SqkLineProblem::SessionId);
    let err = KeyFile::parse(b"SECRETKEY:1,1\r\n").unwrap_err();
    assert!(!err.to_string().contains("SECRET"), "{err}");
    let err = KeyFile::parse(b"1,1:abc\r\n1,1:abd\r\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 2: second key for session 1,1 (the first is line 1)"
    );
    let err = KeyFile::parse(b"1,1:ab c\r\n").unwrap_err();
    assert!(!err.to_string().contains("ab c"), "{err}");
}

#[test]
fn keys_must_cover_exactly_the_declared_sessions() {
    let mut tournament = Tournament::new("T", "lottery of 1 May").unwrap();
    tournament.add_phase(2, "8", "rr", "Round robin").unwrap();
    let one = squaredeal::generate_session_key().unwrap();
    let sqk = tournament.publish(vec![one.clone(), one.clone()]).unwrap();
    let keys = KeyFile::parse(&sqk).unwrap();
    assert!(squaredeal::verify(&tournament, &keys).is_ok());

    let mut missing = sqk.clone();
    missing.truncate(sqk.len() / 2);
    let mut short = tournament.clone();
    short.key_hash = Some(squaredeal::key_hash(&missing));
    assert_eq!(
        squaredeal::verify(&short, &KeyFile::parse(&missing).unwrap()).unwrap_err(),
        VerifyError::MissingKey {
            phase: 1,
            session: 2
        }
    );

    let mut extra = sqk.clone();
    extra.extend_from_slice(b"2,1:abcdef\r\n");
    let mut more = tournament.clone();
    more.key_hash = Some(squaredeal::key_hash(&extra));
    assert_eq!(
        squaredeal::verify(&more, &KeyFile::parse(&extra).unwrap()).unwrap_err(),
        VerifyError::UndeclaredKey {
            phase: 2,
            session: 1,
            line: 3
        }
    );
}

#[test]
fn organiser_to_auditor_in_memory() {
    let mut tournament =
        Tournament::new("Club Pairs 2026", "EuroMillions draw of 3 March").unwrap();
    tournament
        .add_phase(3, "2x12", "cp", "Club pairs: qualifying")
        .unwrap();
    tournament.add_phase(1, "?", "final", "Final").unwrap();
    assert_eq!(
        tournament.phases[0].to_sn(),
        "3:1-12,13-24:cp#:Club pairs qualifying #/3"
    );
    let keys: Vec<_> = (0..tournament.session_count())
        .map(|_| squaredeal::generate_session_key().unwrap())
        .collect();
    let sqk = tournament.publish(keys).unwrap();
    assert!(tournament.add_phase(1, "8", "late", "Late").is_err());
    tournament
        .set_delayed_value("  07 19 23 38 44 + 03 11 ")
        .unwrap();
    assert!(tournament.set_delayed_value("01 02 03").is_err());

    // The auditor reads the published files back.
    let published = Tournament::parse(tournament.to_sqd().as_bytes()).unwrap();
    assert_eq!(published, tournament);
    let keys = KeyFile::parse(&sqk).unwrap();
    let verified = squaredeal::verify(&published, &keys).unwrap();
    let session = verified.make(1, 3, SetKind::Original, None).unwrap();
    assert_eq!(session.boards.len(), 12);
    assert_eq!(session.boards[0].number, 1);
    assert_eq!(session.session.description, "Club pairs qualifying 3/3");

    // The seed is the key's halves with base64 of the trimmed delayed value.
    let key = keys.key(1, 3).unwrap();
    let seed = squaredeal::session_seed(key, "07 19 23 38 44 + 03 11", SetKind::Original);
    assert_eq!(
        bigdeal::boards(&seed, 1, 12),
        session.boards,
        "session seed differs"
    );

    // A phase whose boards were left open needs them given.
    assert!(verified.make(2, 1, SetKind::Original, None).is_err());
    let spec = "1-7".parse().unwrap();
    let final_boards = verified.make(2, 1, SetKind::Original, Some(&spec)).unwrap();
    assert_eq!(final_boards.boards.len(), 7);
    let pbn = squaredeal::session_pbn(&published, &final_boards, "fairdeal");
    assert!(pbn.contains("[Event \"Club Pairs 2026: Final\"]"));
    assert_eq!(pbn.matches("[Deal \"N:").count(), 7);
}

#[test]
fn boards_carry_the_standard_rotation_and_lin() {
    let board = Board::new(5, DealNumber::MIN);
    let mut lin = String::new();
    board.write_lin(&mut lin);
    assert_eq!(
        lin,
        "qx|o5|md|3SHDAKQJT98765432C,SHDCAKQJT98765432,SAKQJT98765432HDC|rh||ah|Board 5|sv|n|pg||\n"
    );
}
