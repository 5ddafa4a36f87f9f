//! fairdeal-demo: the demo table `fairdeal-server up` plays while it serves.
//!
//! Four players, each a client of the public gRPC API (`fairdeal-client`: each move chosen
//! by the engine's bot from the seat's own view), sign up, sit at one table, say a line each
//! on the table's chat channel, and play the match to the end; then the revealed server seed
//! re-derives every hand with `fairdeal-fairness`, the rating service's changes are read
//! back (before -> after, E, S, K), and the ledger's export of the game is written under the
//! data directory and checked by `fairdeal_cli::audit`, the code `fairdeal audit` runs, with
//! the command to re-run that check by hand.
//!
//! The demo is a list of [`STEPS`], each reading and extending the shared [`Demo`] state
//! (players, table, result, chat, ratings, audit). A step for another service is one entry
//! there.
//!
//! The demo is a client: it links the services' gRPC clients and the auditor's checks, no
//! service. The server (`fairdeal-server up`) hands it the platform's address and the
//! directories it reads and writes ([`Demo::connect`]).
#![forbid(unsafe_code)]

pub mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use fairdeal_authn::AccessToken;
use fairdeal_client::ClientError;
use fairdeal_fairness::Deck;
use fairdeal_fairness::commitment::Commitment;
use fairdeal_fairness::deal::Deal;
use fairdeal_proto::fairdeal::auth::v1 as apb;
use fairdeal_proto::fairdeal::auth::v1::auth_service_client::AuthServiceClient;
use fairdeal_proto::fairdeal::chat::v1 as cpb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use fairdeal_proto::fairdeal::ledger::v1 as lpb;
use fairdeal_proto::fairdeal::ledger::v1::ledger_service_client::LedgerServiceClient;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::rating::v1::rating_service_client::RatingServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use pb::table_event::Event as E;
use tonic::transport::Channel;
use tonic::{Request, Streaming};

pub use text::{SEAT_NAMES, seat_letter};

/// How long the demo waits for one thing (a mail, the next table event) before giving up.
const WAIT: Duration = Duration::from_secs(60);
/// How often the demo's players look into the mail directory.
const MAIL_POLL: Duration = Duration::from_millis(50);
/// More moves than any match takes: a guard against a table that never ends.
const MAX_MOVES: u32 = 20_000;
/// Hands shown in full (the four hands, every trick); later ones get a line or two each.
const DETAILED_HANDS: u32 = 1;

/// Where the demo writes its lines (stdout, or a buffer in tests).
#[derive(Clone)]
pub struct Output {
    /// The sink.
    sink: Arc<Mutex<dyn Write + Send>>,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Output")
    }
}

impl Output {
    /// Lines to standard output.
    pub fn stdout() -> Output {
        Output {
            sink: Arc::new(Mutex::new(std::io::stdout())),
        }
    }

    /// Lines into a buffer, returned beside.
    pub fn buffer() -> (Output, Arc<Mutex<Vec<u8>>>) {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        (
            Output {
                sink: buffer.clone(),
            },
            buffer,
        )
    }

    /// Writes one line (a failed write to the terminal is not worth stopping the demo).
    pub fn line(&self, text: impl std::fmt::Display) {
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(sink, "{text}");
        let _ = sink.flush();
    }
}

/// One demo player: an account of the auth service, logged in.
#[derive(Debug, Clone)]
pub struct Player {
    /// The seat it takes.
    pub seat: u32,
    /// Its username.
    pub username: String,
    /// Its password (the demo made it up; shown nowhere).
    pub password: String,
    /// Its account id.
    pub user_id: String,
    /// Its access token.
    pub access_token: String,
    /// Its calls to the tables service (`fairdeal-client`), with that token.
    pub client: fairdeal_client::Player,
}

/// The demo's table.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// The table id.
    pub id: String,
    /// The server seed's commitment, published at creation.
    pub commitment: String,
    /// The table version after the last seat was taken.
    pub seated_version: u64,
}

/// The state the steps share.
#[derive(Debug)]
pub struct Demo {
    /// The platform's one address.
    channel: Channel,
    /// Where the ledger's export is written.
    exports: PathBuf,
    /// The auth service's mail directory.
    mailbox: PathBuf,
    /// The ledger's public key (`fairdeal audit --log-key`).
    log_key: String,
    /// Where progress goes.
    pub out: Output,
    /// The four players, by seat.
    pub players: Vec<Player>,
    /// The table, once created.
    pub table: Option<TableInfo>,
    /// (seat, hand) -> the cards the seat's own view showed at the start of the hand.
    pub shown: BTreeMap<(u32, u32), Vec<String>>,
    /// How the game ended.
    pub finished: Option<pb::GameFinished>,
    /// The seeds revealed after the game.
    pub revealed: Option<pb::TableSeedRevealed>,
    /// Deals re-derived from the revealed seed and found equal to what was dealt.
    pub deals_verified: u32,
    /// The rating changes of the game, by seat, as the rating service reports them.
    pub ratings: Vec<rpb::RatingChanged>,
    /// The table chat's messages as north's subscription delivered them.
    pub chat: Vec<cpb::ChatMessage>,
    /// The game's ledger export as written under the data directory, and its audit.
    pub audit: Option<(PathBuf, fairdeal_cli::audit::Report)>,
    /// The game the demo table plays.
    pub game: DemoGame,
}

/// The game of the demo table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DemoGame {
    /// Jeu du 10, the plain game (2 teams of 2).
    #[default]
    JeuDu10,
    /// French Tarot for four, one round (four deals).
    Tarot,
}

impl DemoGame {
    /// The table options it is created with.
    fn options(self) -> Option<pb::TableOptions> {
        match self {
            DemoGame::JeuDu10 => None,
            DemoGame::Tarot => Some(pb::TableOptions {
                tarot: Some(pb::TarotOptions {
                    seats: 4,
                    rounds: 1,
                }),
                ..Default::default()
            }),
        }
    }
}

/// A step's run.
type StepFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

/// One step of the demo.
pub struct Step {
    /// Its heading.
    pub title: &'static str,
    /// What it does.
    pub run: for<'a> fn(&'a mut Demo) -> StepFuture<'a>,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step").field("title", &self.title).finish()
    }
}

/// The demo, in order.
pub const STEPS: &[Step] = &[
    Step {
        title: "Four players sign up (register, confirm by the mailed code, log in)",
        run: |d| Box::pin(sign_up(d)),
    },
    Step {
        title: "A table: the server seed is committed before anyone sits",
        run: |d| Box::pin(open_table(d)),
    },
    Step {
        title: "Table chat: the players subscribe to the table's channel and say hello",
        run: |d| Box::pin(chat(d)),
    },
    Step {
        title: "The match, each move chosen by the engine's bot from the seat's own view",
        run: |d| Box::pin(play(d)),
    },
    Step {
        title: "Fairness: the revealed seed re-derives every hand",
        run: |d| Box::pin(check_seeds(d)),
    },
    Step {
        title: "Ratings: the rating service rated the game (SPEC 6: after = before + K (S - E))",
        run: |d| Box::pin(show_ratings(d)),
    },
    Step {
        title: "The ledger: the game's export, checked by the same code as `fairdeal audit`",
        run: |d| Box::pin(audit_export(d)),
    },
];

impl Demo {
    /// A demo against the platform at `url` that writes the ledger's export into `exports`
    /// (a directory of the owner only, which the platform creates), whose auth service
    /// writes its mails to `mailbox`, and whose ledger signs with `log_key`'s key.
    pub async fn connect(
        url: &str,
        exports: &Path,
        mailbox: &Path,
        log_key: &str,
        out: Output,
    ) -> anyhow::Result<Demo> {
        let channel = Channel::from_shared(url.to_owned())
            .context("platform address")?
            .connect()
            .await
            .with_context(|| format!("connecting to {url}"))?;
        Ok(Demo {
            channel,
            exports: exports.to_owned(),
            mailbox: mailbox.to_owned(),
            log_key: log_key.to_owned(),
            out,
            players: Vec::new(),
            table: None,
            shown: BTreeMap::new(),
            finished: None,
            revealed: None,
            deals_verified: 0,
            ratings: Vec::new(),
            chat: Vec::new(),
            audit: None,
            game: DemoGame::JeuDu10,
        })
    }

    /// The same demo, its table playing `game`.
    #[must_use]
    pub fn playing(mut self, game: DemoGame) -> Self {
        self.game = game;
        self
    }

    /// Runs `steps` in order, each under its heading.
    pub async fn run(&mut self, steps: &[Step]) -> anyhow::Result<()> {
        for (i, step) in steps.iter().enumerate() {
            self.out.line("");
            self.out.line(format!("== {}. {}", i + 1, step.title));
            (step.run)(self)
                .await
                .with_context(|| format!("demo step {}", i + 1))?;
        }
        Ok(())
    }

    /// An auth service client.
    pub fn auth(&self) -> AuthServiceClient<Channel> {
        AuthServiceClient::new(self.channel.clone())
    }

    /// A tables service client.
    pub fn tables(&self) -> TablesServiceClient<Channel> {
        TablesServiceClient::new(self.channel.clone())
    }

    /// A chat service client.
    pub fn chat(&self) -> ChatServiceClient<Channel> {
        ChatServiceClient::new(self.channel.clone())
    }

    /// A ledger client.
    pub fn ledger(&self) -> LedgerServiceClient<Channel> {
        LedgerServiceClient::new(self.channel.clone())
    }

    /// A rating service client.
    pub fn rating(&self) -> RatingServiceClient<Channel> {
        RatingServiceClient::new(self.channel.clone())
    }

    /// The table, once [`open_table`] ran.
    pub fn table(&self) -> anyhow::Result<&TableInfo> {
        self.table.as_ref().context("no table yet")
    }

    fn player(&self, seat: u32) -> anyhow::Result<&Player> {
        self.players
            .get(seat as usize)
            .with_context(|| format!("no player at seat {seat}"))
    }

    /// `seat`'s view of the table.
    async fn view(&self, seat: u32) -> anyhow::Result<pb::TableView> {
        Ok(self.player(seat)?.client.view(&self.table()?.id).await?)
    }
}

/// `message` with the player's bearer token.
pub fn authed<T>(access_token: &str, message: T) -> anyhow::Result<Request<T>> {
    let mut request = Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {access_token}")
            .parse()
            .context("token as metadata")?,
    );
    Ok(request)
}

fn random_hex(len: usize) -> anyhow::Result<String> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|e| anyhow!("no OS randomness: {e}"))?;
    Ok(hex::encode(bytes))
}

/// Length of a one-time code in a mail: 32 random bytes, base64url without padding.
const CODE_LENGTH: usize = 43;

/// The newest mail in `dir` to `to` mentioning `word`, and the one-time code on a line of its
/// own in it: (file name, code).
pub fn code_in_mail(dir: &Path, to: &str, word: &str) -> Option<(String, String)> {
    let recipient = format!("To: {to}");
    let mut found: Vec<(String, String)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "eml"))
        .filter_map(|entry| {
            let text = std::fs::read_to_string(entry.path()).ok()?;
            if !text.contains(&recipient) || !text.contains(word) {
                return None;
            }
            let code = text.lines().map(str::trim).find(|line| {
                line.len() == CODE_LENGTH
                    && line
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })?;
            Some((
                entry.file_name().to_string_lossy().into_owned(),
                code.to_owned(),
            ))
        })
        .collect();
    // Mail file names are UUIDv7s: the greatest is the newest.
    found.sort();
    found.pop()
}

/// Waits for [`code_in_mail`] (the auth service sends mails in the background).
pub async fn wait_for_mail(dir: &Path, to: &str, word: &str) -> anyhow::Result<(String, String)> {
    let wait = async {
        loop {
            if let Some(found) = code_in_mail(dir, to, word) {
                return found;
            }
            tokio::time::sleep(MAIL_POLL).await;
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .map_err(|_| anyhow!("no mail to {to} in {} within {WAIT:?}", dir.display()))
}

/// Step 1: an account per seat, through the auth service's public API.
async fn sign_up(demo: &mut Demo) -> anyhow::Result<()> {
    let suffix = random_hex(3)?;
    let mut auth = demo.auth();
    for (seat, name) in (0u32..).zip(SEAT_NAMES) {
        let username = format!("{name}-{suffix}");
        let email = format!("{username}@example.com");
        let password = format!("{} {name} plays", random_hex(8)?);
        let user_id = auth
            .register(apb::RegisterRequest {
                username: username.clone(),
                email: email.clone(),
                password: password.clone().into_bytes(),
            })
            .await?
            .into_inner()
            .user_id;
        let (file, code) = wait_for_mail(&demo.mailbox, &email, "Confirm").await?;
        auth.confirm_email(apb::ConfirmEmailRequest { token: code })
            .await?;
        let tokens = auth
            .login(apb::LoginRequest {
                username: username.clone(),
                password: password.clone().into_bytes(),
            })
            .await?
            .into_inner()
            .tokens
            .context("Login without tokens")?;
        demo.out.line(format!(
            "  {username:<14} registered, confirmed with the code mailed to mailbox/{file}, logged in"
        ));
        let id = uuid::Uuid::parse_str(&user_id).context("Register's user id")?;
        let client = fairdeal_client::Player::new(
            id,
            AccessToken::new(tokens.access_token.clone()),
            demo.channel.clone(),
        );
        demo.players.push(Player {
            seat,
            username,
            password,
            user_id,
            access_token: tokens.access_token,
            client,
        });
    }
    Ok(())
}

/// Step 2: north creates the table; everyone sits; three contribute to the client seed (the
/// fourth seat taken starts the match and deals the first hand).
async fn open_table(demo: &mut Demo) -> anyhow::Result<()> {
    let created = demo
        .player(0)?
        .client
        .create_table(pb::CreateTableRequest {
            options: demo.game.options(),
            bot_seats: vec![],
            move_seconds: 0,
            timelock_seconds: 0,
        })
        .await?;
    demo.out.line(format!("  table {}", created.table_id));
    demo.out.line(format!(
        "  commitment (SHA-256 of the server seed): {} (short code {})",
        created.commitment, created.short_code
    ));
    let mut seated_version = created.version;
    for player in demo.players.clone() {
        let sat = player.client.sit(&created.table_id, player.seat).await?;
        seated_version = sat.version;
        let mut line = format!(
            "  {} sits {} (sees short code {})",
            player.username, SEAT_NAMES[player.seat as usize], sat.short_code
        );
        if player.seat < 3 {
            let contribution = format!("{}'s luck {}", player.username, random_hex(4)?);
            seated_version = player
                .client
                .contribute(&created.table_id, &contribution)
                .await?;
            line.push_str(&format!(
                " and contributes {contribution:?} to the client seed"
            ));
        }
        demo.out.line(line);
    }
    demo.table = Some(TableInfo {
        id: created.table_id,
        commitment: created.commitment,
        seated_version,
    });
    Ok(())
}

/// Prints a watched table's public events as the match goes.
#[derive(Debug, Default)]
struct Progress {
    /// The last version printed.
    version: u64,
    /// The auction of the current hand.
    auction: Vec<String>,
    /// The trick being played.
    trick: Vec<String>,
    /// Whether a hand started since the caller last asked.
    new_hand: Option<u32>,
    /// The current hand's number.
    hand: u32,
    /// Tricks won by each team in the current hand.
    tricks_won: [u32; 2],
    /// The game's end, once seen.
    finished: Option<pb::GameFinished>,
    /// The revealed seeds, once seen.
    revealed: Option<pb::TableSeedRevealed>,
}

impl Progress {
    /// Reads `watch` up to `version` (inclusive), printing as it goes.
    async fn follow(
        &mut self,
        watch: &mut Streaming<pb::WatchResponse>,
        version: u64,
        out: &Output,
    ) -> anyhow::Result<()> {
        while self.version < version {
            let message = tokio::time::timeout(WAIT, watch.message())
                .await
                .map_err(|_| anyhow!("no table event within {WAIT:?}"))??
                .context("the table's watch ended")?;
            self.version = message.version;
            if let Some(event) = message.event.and_then(|e| e.event) {
                self.show(event, out);
            }
        }
        Ok(())
    }

    /// Reads `watch` until the seeds are revealed.
    async fn until_revealed(
        &mut self,
        watch: &mut Streaming<pb::WatchResponse>,
        out: &Output,
    ) -> anyhow::Result<pb::TableSeedRevealed> {
        loop {
            if let Some(revealed) = &self.revealed {
                return Ok(revealed.clone());
            }
            let next = self.version + 1;
            self.follow(watch, next, out).await?;
        }
    }

    fn show(&mut self, event: E, out: &Output) {
        match event {
            E::MatchStarted(m) => out.line(format!(
                "  match started, first dealer {}",
                seat_letter(m.first_dealer)
            )),
            E::HandStarted(h) => {
                out.line(format!(
                    "  hand {} (dealer {}, salt {:?})",
                    h.hand,
                    seat_letter(h.dealer),
                    h.salt
                ));
                self.auction.clear();
                self.trick.clear();
                self.tricks_won = [0, 0];
                self.hand = h.hand;
                self.new_hand = Some(h.hand);
            }
            E::BidPlaced(b) => self.auction.push(format!(
                "{} {}",
                seat_letter(b.seat),
                text::bid_text(b.bid.as_ref())
            )),
            E::PlayerPassed(p) => self.auction.push(format!("{} pass", seat_letter(p.seat))),
            E::AuctionWon(a) => out.line(format!(
                "    auction {} -> contract {} {}",
                self.auction.join(", "),
                seat_letter(a.seat),
                text::bid_text(a.bid.as_ref())
            )),
            E::TrumpNamed(t) => out.line(format!(
                "    {} names {} trump",
                seat_letter(t.seat),
                text::suit_name(t.suit)
            )),
            E::CardPlayed(c) => self
                .trick
                .push(format!("{} {}", seat_letter(c.seat), c.card)),
            E::TrickWon(t) => {
                if self.hand < DETAILED_HANDS {
                    out.line(format!(
                        "    trick {:>2}: {:<24} -> {} takes {} points",
                        t.trick,
                        self.trick.join("  "),
                        seat_letter(t.seat),
                        t.points
                    ));
                }
                if let Some(won) = self.tricks_won.get_mut((t.seat % 2) as usize) {
                    *won += 1;
                }
                self.trick.clear();
            }
            E::HandScored(s) => {
                let verdict = match s.contract_made {
                    Some(true) => "made",
                    Some(false) => "failed",
                    None => "scored",
                };
                let of = |v: &[i32], i: usize| v.get(i).copied().unwrap_or_default();
                out.line(format!(
                    "    contract {} {} {verdict} (tricks N-S {} : E-W {}): N-S {:+} E-W {:+}; scores N-S {} : E-W {}",
                    seat_letter(s.declarer),
                    text::bid_text(s.bid.as_ref()),
                    self.tricks_won[0],
                    self.tricks_won[1],
                    of(&s.deltas, 0),
                    of(&s.deltas, 1),
                    of(&s.scores, 0),
                    of(&s.scores, 1),
                ));
            }
            E::TurnTimedOut(t) => out.line(format!(
                "    {} let the clock run out; the bot played for them",
                seat_letter(t.seat)
            )),
            E::SeatAbandoned(a) => {
                out.line(format!("    {} abandoned the seat", seat_letter(a.seat)));
            }
            E::GameFinished(f) if f.teams.len() > 2 => {
                let scores: Vec<String> = f
                    .final_scores
                    .iter()
                    .enumerate()
                    .map(|(seat, score)| format!("{} {score}", seat_letter(seat as u32)))
                    .collect();
                out.line(format!(
                    "  game over after {} deals: {} wins; {}",
                    f.hands_played,
                    seat_letter(f.winner),
                    scores.join(", ")
                ));
                self.finished = Some(f);
            }
            E::GameFinished(f) => {
                let of = |i: usize| f.final_scores.get(i).copied().unwrap_or_default();
                out.line(format!(
                    "  game over after {} hands: {} win, N-S {} : E-W {}",
                    f.hands_played,
                    if f.winner == 0 { "N-S" } else { "E-W" },
                    of(0),
                    of(1)
                ));
                self.finished = Some(f);
            }
            E::TarotBidPlaced(b) => self.auction.push(format!(
                "{} {}",
                seat_letter(b.seat),
                text::tarot_contract(b.contract)
            )),
            E::TarotPlayerPassed(p) => {
                self.auction.push(format!("{} pass", seat_letter(p.seat)));
            }
            E::TarotAllPassed(_) => out.line(format!(
                "    auction {}: everyone passed, the deal is void",
                self.auction.join(", ")
            )),
            E::TarotAuctionWon(a) => out.line(format!(
                "    auction {} -> {} takes, {}",
                self.auction.join(", "),
                seat_letter(a.seat),
                text::tarot_contract(a.contract)
            )),
            E::TarotChienShown(c) => {
                out.line(format!("    the chien, shown: {}", c.cards.join(" ")))
            }
            E::TarotTrumpDiscarded(d) => out.line(format!(
                "    {} puts a trump in the écart, shown: {}",
                seat_letter(d.seat),
                d.card
            )),
            E::TarotCardPlayed(c) => self
                .trick
                .push(format!("{} {}", seat_letter(c.seat), c.card)),
            E::TarotTrickWon(t) => {
                if self.hand < DETAILED_HANDS {
                    out.line(format!(
                        "    trick {:>2}: {:<28} -> {}",
                        t.trick,
                        self.trick.join("  "),
                        seat_letter(t.seat)
                    ));
                }
                self.trick.clear();
            }
            E::TarotDealScored(d) => {
                if let Some(score) = d.score {
                    let scores: Vec<String> = score
                        .scores
                        .iter()
                        .enumerate()
                        .map(|(seat, s)| format!("{} {s}", seat_letter(seat as u32)))
                        .collect();
                    out.line(format!(
                        "    {} {} {} ({} oudlers, {} of {} points needed): each defender {:+}; scores {}",
                        seat_letter(score.taker),
                        text::tarot_contract(score.contract),
                        if score.made { "made" } else { "failed" },
                        score.oudlers,
                        f64::from(score.half_points) / 2.0,
                        score.target,
                        -score.value,
                        scores.join(", ")
                    ));
                }
            }
            E::TableSeedRevealed(r) => {
                out.line(format!("  server seed revealed: {}", r.server_seed));
                out.line(format!("  client seed:          {}", r.client_seed));
                self.revealed = Some(r);
            }
            _ => {}
        }
    }
}

/// Step 3: the match. North watches the table (its progress is printed from that watch);
/// whoever must act reads its own view, lets the bot choose, and acts.
async fn play(demo: &mut Demo) -> anyhow::Result<()> {
    let table = demo.table()?.clone();
    let mut watch = demo.player(0)?.client.watch(&table.id, 0, false).await?;
    let mut progress = Progress::default();
    progress
        .follow(&mut watch, table.seated_version, &demo.out)
        .await?;
    let mut moves = 0u32;
    loop {
        if let Some(hand) = progress.new_hand.take() {
            show_hands(demo, hand).await?;
        }
        let public = demo.view(0).await?;
        if public.status == pb::TableStatus::Finished as i32 {
            break;
        }
        let Some(turn) = public.game.as_ref().and_then(|g| g.turn) else {
            // Between two events of one command (e.g. the next deal): wait for the next.
            progress
                .follow(&mut watch, public.version + 1, &demo.out)
                .await?;
            continue;
        };
        let mine = demo.view(turn).await?;
        let Some(action) = fairdeal_client::choose(&mine, 0x5eed ^ u64::from(turn))? else {
            // The view changed since (a turn clock fired): read on.
            continue;
        };
        let acted = demo
            .player(turn)?
            .client
            .act(&table.id, mine.version, action)
            .await;
        let version = match acted {
            Ok(version) => version,
            // The table moved on under us (a turn clock): decide again from a fresh view.
            Err(ClientError::Status(status)) if status.code() == tonic::Code::Aborted => {
                continue;
            }
            Err(error) => return Err(error).context("Act"),
        };
        progress.follow(&mut watch, version, &demo.out).await?;
        moves += 1;
        if moves > MAX_MOVES {
            bail!("the match did not end within {MAX_MOVES} moves");
        }
    }
    demo.revealed = Some(progress.until_revealed(&mut watch, &demo.out).await?);
    demo.finished = Some(progress.finished.context("no GameFinished seen")?);
    demo.out
        .line(format!("  {moves} moves by the four clients"));
    Ok(())
}

/// Each seat's own hand at the start of `hand`, read with that seat's token.
async fn show_hands(demo: &mut Demo, hand: u32) -> anyhow::Result<()> {
    for seat in 0..4u32 {
        let view = demo.view(seat).await?;
        let game = view.game.context("a view without game")?;
        if game.hand != Some(hand) {
            continue;
        }
        if hand < DETAILED_HANDS {
            demo.out.line(format!(
                "    {}: {}",
                seat_letter(seat),
                game.my_hand.join(" ")
            ));
        }
        demo.shown.insert((seat, hand), game.my_hand);
    }
    Ok(())
}

/// Step 4: the commitment matches the revealed seed, and every deal re-derived from it
/// (with the client seed and each hand's salt) is what each seat was dealt and shown.
async fn check_seeds(demo: &mut Demo) -> anyhow::Result<()> {
    let table = demo.table()?.clone();
    let revealed = demo.revealed.clone().context("the seed is not revealed")?;
    if Commitment::of(&revealed.server_seed).to_hex() != table.commitment {
        bail!("the revealed seed does not match the commitment");
    }
    demo.out.line(format!(
        "  SHA-256(server seed) = {} = the commitment published before anyone sat",
        table.commitment
    ));
    let view = demo.view(0).await?;
    let deck = match view.options.as_ref() {
        Some(o) if o.tarot.is_some() => Deck::Tarot4,
        Some(o) if o.deck == pb::Deck::Ruff as i32 => Deck::Ruff,
        _ => Deck::Dix,
    };
    // After the game every event is public: replay the table from the start.
    let mut replay = demo.player(0)?.client.watch(&table.id, 0, false).await?;
    let mut current: Option<(u32, Deal)> = None;
    let mut matched: BTreeMap<u32, u32> = BTreeMap::new();
    let mut version = 0;
    while version < view.version {
        let message = tokio::time::timeout(WAIT, replay.message())
            .await
            .map_err(|_| anyhow!("replay stalled"))??
            .context("the replay ended early")?;
        version = message.version;
        match message.event.and_then(|e| e.event) {
            Some(E::Placeholder(_)) => bail!("a hidden event after the game finished"),
            Some(E::HandStarted(h)) => {
                if h.client_seed != revealed.client_seed || h.commitment != table.commitment {
                    bail!("hand {} names other seeds than the revealed ones", h.hand);
                }
                let deal = Deal::from_seeds(deck, &revealed.server_seed, &h.client_seed, &h.salt);
                current = Some((h.hand, deal));
            }
            Some(E::CardsDealt(c)) => {
                let (hand, deal) = current.as_ref().context("cards before a hand")?;
                let derived: BTreeSet<&str> = deal
                    .hands
                    .get(c.position as usize)
                    .map(|cards| deal.codes(cards))
                    .context("no such position")?
                    .into_iter()
                    .collect();
                let dealt: BTreeSet<&str> = c.cards.iter().map(String::as_str).collect();
                if derived != dealt {
                    bail!("hand {hand}, seat {}: the re-derived cards differ", c.seat);
                }
                if let Some(shown) = demo.shown.get(&(c.seat, *hand)) {
                    let shown: BTreeSet<&str> = shown.iter().map(String::as_str).collect();
                    if shown != dealt {
                        bail!("hand {hand}, seat {}: the view showed other cards", c.seat);
                    }
                }
                *matched.entry(*hand).or_default() += 1;
            }
            Some(E::TalonDealt(t)) => {
                let (hand, deal) = current.as_ref().context("a chien before a hand")?;
                let derived: BTreeSet<&str> = deal.codes(&deal.chien).into_iter().collect();
                let dealt: BTreeSet<&str> = t.cards.iter().map(String::as_str).collect();
                if derived != dealt {
                    bail!("hand {hand}: the re-derived chien differs");
                }
            }
            _ => {}
        }
    }
    for (hand, seats) in &matched {
        if *seats != 4 {
            bail!("hand {hand}: {seats} seats' cards checked, not 4");
        }
    }
    demo.out.line(
        "  each hand h re-derived from (server seed, client seed, salt \"h\") with fairdeal-fairness",
    );
    demo.out
        .line("  equals the cards dealt to every seat and the hand each seat's own view showed");
    demo.deals_verified = u32::try_from(matched.len())?;
    demo.out.line(format!(
        "  fairness check passed: {} deals re-derived with fairdeal-fairness",
        demo.deals_verified
    ));
    Ok(())
}

/// How often the ratings step asks whether the game is rated yet (the rating service's
/// consumer rates it in the background once the tables' `GameFinished` is appended).
const RATING_POLL: Duration = Duration::from_millis(100);

/// Step 5: each player's change for this game, read from the rating service's history (as
/// any logged-in client can); waits until the consumer has rated the game.
async fn show_ratings(demo: &mut Demo) -> anyhow::Result<()> {
    let table = demo.table()?.clone();
    let mut rating = demo.rating();
    let mut changes = Vec::new();
    for player in demo.players.clone() {
        let wait = async {
            loop {
                let history = rating
                    .list_rating_history(authed(
                        &player.access_token,
                        rpb::ListRatingHistoryRequest {
                            player_id: player.user_id.clone(),
                            game_kind: String::new(),
                            page_size: 0,
                            page_token: String::new(),
                        },
                    )?)
                    .await?
                    .into_inner();
                if let Some(change) = history
                    .entries
                    .into_iter()
                    .filter_map(|e| e.change)
                    .find(|c| c.table_id == table.id)
                {
                    return anyhow::Ok(change);
                }
                tokio::time::sleep(RATING_POLL).await;
            }
        };
        let change = tokio::time::timeout(WAIT, wait)
            .await
            .map_err(|_| anyhow!("{} not rated within {WAIT:?}", player.username))??;
        demo.out.line(format!(
            "  {:<14} {} {:>7.1} -> {:>7.1} ({:+.1}): E {:.3}, S {}, K {}{}",
            player.username,
            seat_letter(change.seat),
            change.rating_before,
            change.rating_after,
            change.rating_after - change.rating_before,
            change.expectation,
            change.score,
            change.k,
            if change.abandoned { " (abandoned)" } else { "" },
        ));
        changes.push(change);
    }
    if let Some(kind) = changes.first().map(|c| c.game_kind.clone()) {
        demo.out.line(format!(
            "  rated in {kind}; each player's history: fairdeal.rating.v1.RatingService/ListRatingHistory"
        ));
    }
    demo.ratings = changes;
    Ok(())
}

/// What the demo's players say at the table, by seat.
const CHAT_LINES: [&str; 4] = [
    "Good luck, everyone!",
    "Have fun. May the cards be kind.",
    "Hello from south: let's play.",
    "gl hf",
];

/// How often a subscription is retried while the chat has not yet seen the player sit (its
/// membership consumer reads the tables' events in the background).
const CHAT_RETRY: Duration = Duration::from_millis(100);

/// `player`'s subscription to `channel`, once connected (its first item).
async fn subscribe(
    demo: &Demo,
    player: &Player,
    channel: &str,
) -> anyhow::Result<Streaming<cpb::SubscribeResponse>> {
    let mut chat = demo.chat();
    let wait = async {
        loop {
            let request = authed(
                &player.access_token,
                cpb::SubscribeRequest {
                    channel: channel.to_owned(),
                },
            )?;
            match chat.subscribe(request).await {
                Ok(response) => {
                    let mut stream = response.into_inner();
                    match stream.message().await?.and_then(|r| r.item) {
                        Some(cpb::subscribe_response::Item::Connected(_)) => {
                            return anyhow::Ok(stream);
                        }
                        other => bail!("a subscription began with {other:?}, not Connected"),
                    }
                }
                // Not a member yet: the chat has not read the Sit event yet.
                Err(status) if status.code() == tonic::Code::PermissionDenied => {
                    tokio::time::sleep(CHAT_RETRY).await;
                }
                Err(status) => return Err(status).context("Subscribe"),
            }
        }
    };
    tokio::time::timeout(WAIT, wait).await.map_err(|_| {
        anyhow!(
            "{} could not subscribe to {channel} within {WAIT:?}",
            player.username
        )
    })?
}

/// Step 3: every player subscribes to `table-<id>` (the chat knows the members from the
/// tables' events); each posts a line, printed as north's subscription delivers it. The
/// match is on (the last seat taken started it); the channel turns read-only at its end.
async fn chat(demo: &mut Demo) -> anyhow::Result<()> {
    let channel = format!("table-{}", demo.table()?.id);
    let mut streams = Vec::new();
    for player in &demo.players {
        streams.push(subscribe(demo, player, &channel).await?);
    }
    demo.out.line(format!(
        "  the four players are subscribed to {channel} (fairdeal.chat.v1.ChatService/Subscribe)"
    ));
    let mut chat = demo.chat();
    let north = streams.first_mut().context("no subscription")?;
    for (player, text) in demo.players.clone().iter().zip(CHAT_LINES) {
        let posted = chat
            .post(authed(
                &player.access_token,
                cpb::PostRequest {
                    channel: channel.clone(),
                    text: text.to_owned(),
                },
            )?)
            .await
            .context("Post")?
            .into_inner()
            .message
            .context("Post without the message")?;
        // Printed as it arrives on north's subscription, not from Post's answer.
        let arrived = loop {
            let item = tokio::time::timeout(WAIT, north.message())
                .await
                .map_err(|_| anyhow!("no chat message within {WAIT:?}"))??
                .context("north's subscription ended")?;
            if let Some(cpb::subscribe_response::Item::Message(m)) = item.item
                && m.message_id == posted.message_id
            {
                break m;
            }
        };
        let author = demo
            .players
            .iter()
            .find(|p| p.user_id == arrived.author_id)
            .map_or("?", |p| p.username.as_str());
        demo.out.line(format!(
            "  [chat #{}] {author}: {}",
            arrived.seq, arrived.text
        ));
        demo.chat.push(arrived);
    }
    Ok(())
}

/// How often the ledger step asks again while the ledger has not yet ingested the game to
/// its end (its consumer tails the shared log in the background; there is no signal to wait
/// on from a client).
const LEDGER_POLL: Duration = Duration::from_millis(100);

/// The ledger's export of `table_id` (its NDJSON lines).
async fn export_game(
    ledger: &mut LedgerServiceClient<Channel>,
    table_id: &str,
) -> Result<Vec<String>, tonic::Status> {
    let mut stream = ledger
        .export_game(lpb::ExportGameRequest {
            table_id: table_id.to_owned(),
            previous_tree_sizes: vec![],
        })
        .await?
        .into_inner();
    let mut lines = Vec::new();
    while let Some(chunk) = stream.message().await? {
        lines.extend(chunk.lines);
    }
    Ok(lines)
}

/// A path or key as one shell word (single-quoted unless plainly safe).
fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Step 7: the ledger's export of the game (every event of it, each with its inclusion
/// proof under a signed checkpoint), written under the data directory and checked by
/// `fairdeal_cli::audit::audit`, the code `fairdeal audit` runs; then the command to run
/// that check by hand.
async fn audit_export(demo: &mut Demo) -> anyhow::Result<()> {
    let table = demo.table()?.clone();
    let verifier: fairdeal_tlog::NoteVerifier = demo
        .log_key
        .parse()
        .map_err(|e| anyhow!("the ledger's log key: {e}"))?;
    let mut ledger = demo.ledger();
    let rated = demo.ratings.len() as u64;
    // Until the ledger has ingested the game to its seed reveal and its rating changes.
    let wait = async {
        loop {
            match export_game(&mut ledger, &table.id).await {
                Ok(lines) => {
                    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
                    let report = fairdeal_cli::audit::audit(&text, &verifier, None);
                    if report.ratings >= rated {
                        return anyhow::Ok((text, report));
                    }
                }
                Err(status)
                    if matches!(
                        status.code(),
                        tonic::Code::NotFound | tonic::Code::FailedPrecondition
                    ) => {}
                Err(status) => return Err(status).context("ExportGame"),
            }
            tokio::time::sleep(LEDGER_POLL).await;
        }
    };
    let (text, report) = tokio::time::timeout(WAIT, wait)
        .await
        .map_err(|_| anyhow!("the ledger did not export the whole game within {WAIT:?}"))??;
    let file = demo.exports.join(format!("game-{}.ndjson", table.id));
    std::fs::write(&file, &text).with_context(|| format!("writing {}", file.display()))?;
    demo.out.line(format!(
        "  ExportGame: {} events of {} streams under the checkpoint of tree size {}, written to {}",
        report.events,
        report.streams,
        report.tree_size,
        file.display()
    ));
    // The table's chat lines are personal: in the log (their leaves proven), never shown.
    let withheld: u64 = report.withheld.values().sum();
    if withheld > 0 || !report.erased.is_empty() {
        demo.out.line(format!(
            "  withheld (personal, proven by their leaves only): {withheld} lines; erased: {}",
            report.erased.len()
        ));
    }
    let checked: Vec<String> = report
        .checks
        .iter()
        .filter(|(_, count)| count.checked > 0)
        .map(|(check, count)| format!("{check} {}", count.checked))
        .collect();
    demo.out
        .line(format!("  checks run: {}", checked.join(", ")));
    demo.out.line(format!(
        "  re-derived: {} hands, {} moves replayed by the rules engine, {} rating changes recomputed",
        report.hands, report.moves, report.ratings
    ));
    let verdict = if report.failures.is_empty() {
        "passed"
    } else {
        "FAILED"
    };
    demo.out.line(format!(
        "  audit verdict: {verdict} ({} failed checks)",
        report.failures.len()
    ));
    for failure in report.failures.iter().take(5) {
        demo.out.line(format!(
            "    {} at line {}: {}",
            failure.check, failure.line, failure.detail
        ));
    }
    demo.out.line(format!("  log key: {}", demo.log_key));
    demo.out.line("  check it yourself (from the repository):");
    demo.out.line(format!(
        "  cargo run -q -p fairdeal-cli -- audit {} --log-key {}",
        shell_word(&file.display().to_string()),
        shell_word(&demo.log_key)
    ));
    let failed = report.failures.len();
    demo.audit = Some((file, report));
    if failed > 0 {
        bail!("the audit of the game's export failed {failed} checks");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn shell_words_quote_only_what_a_shell_would_split() {
        assert_eq!(
            shell_word("/tmp/data/exports/game-1.ndjson"),
            "/tmp/data/exports/game-1.ndjson"
        );
        assert_eq!(shell_word("ledger+a1b2:c3=="), "ledger+a1b2:c3==");
        assert_eq!(shell_word("my data/x"), "'my data/x'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn the_newest_mail_to_the_player_gives_the_code() {
        let dir = tempfile::tempdir().unwrap();
        let code = |c: char| c.to_string().repeat(CODE_LENGTH);
        let mail = |name: &str, to: &str, subject: &str, code: &str| {
            std::fs::write(
                dir.path().join(name),
                format!("To: {to}\nSubject: {subject}\n\nYour code:\n  {code}\n"),
            )
            .unwrap();
        };
        mail("0001.eml", "north@example.org", "Confirm", &code('a'));
        mail("0002.eml", "north@example.org", "Confirm", &code('b'));
        mail("0003.eml", "east@example.org", "Confirm", &code('c'));
        mail("0004.eml", "north@example.org", "Reset", &code('d'));
        mail("0005.txt", "north@example.org", "Confirm", &code('e'));
        assert_eq!(
            code_in_mail(dir.path(), "north@example.org", "Confirm"),
            Some(("0002.eml".to_owned(), code('b')))
        );
        assert_eq!(
            code_in_mail(dir.path(), "west@example.org", "Confirm"),
            None
        );
        assert_eq!(
            code_in_mail(&dir.path().join("absent"), "north@example.org", "Confirm"),
            None
        );
    }

    #[test]
    fn requests_carry_the_bearer_token() {
        let request = authed("abc.def.ghi", ()).unwrap();
        assert_eq!(
            request.metadata().get("authorization").unwrap(),
            "Bearer abc.def.ghi"
        );
        assert!(authed("line\nbreak", ()).is_err());
    }

    #[test]
    fn seats_and_bids_read_as_text() {
        assert_eq!(
            (0..5).map(seat_letter).collect::<Vec<_>>(),
            ["N", "E", "S", "W", "?"]
        );
        assert_eq!(SEAT_NAMES[2], "south");
        assert_eq!(
            text::bid_text(Some(&pb::Bid {
                kind: Some(pb::bid::Kind::Points(80))
            })),
            "80"
        );
        assert_eq!(text::bid_text(None), "?");
        assert_eq!(text::suit_name(pb::Suit::Hearts as i32), "hearts");
        assert_eq!(text::suit_name(-1), "?");
    }
}
