//! `fairdeal-server`: the whole platform in one process (`up`), or one service of it
//! (`serve --target <service>`). See the library's documentation.
#![forbid(unsafe_code)]

#[global_allocator]
static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use fairdeal_demo::{Demo, DemoGame, Output, STEPS};
use fairdeal_server::serve;
use fairdeal_server::{Platform, UpOptions, examples};

#[derive(Debug, Parser)]
#[command(
    name = "fairdeal-server",
    version,
    about = "The fairdeal platform: every service in one binary"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every service in one process on the embedded default (SQLite under the data
    /// directory, the in-process bus), on one port, with a demo table of bots.
    Up(UpArgs),
    /// One service, with exactly the flags, `FAIRDEAL_*` environment and `--config` file its
    /// own binary `fairdeal-<service>` takes (`serve --target tables -- --help` lists them);
    /// `--target all` is `up --no-demo` and takes `up`'s flags.
    Serve {
        /// The service to run (a name of `fairdeal_server::SERVICES`, or `all`).
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(serve::targets()))]
        target: String,
        /// The service's own flags.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Writes the deployment files generated from the list of services and each one's
    /// `DEPLOYMENT` (the Dockerfile's list, docker-compose.yml's services, the Kubernetes
    /// base, xtask's secrets, the ledger's sources) under the repository's root.
    Deployment {
        /// The repository's root.
        #[arg(long, value_name = "DIR", default_value = ".")]
        root: PathBuf,
        /// Write nothing: list the files that differ and fail if any does.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Debug, Clone, clap::Args)]
struct UpArgs {
    /// Where the database, the keys and the mails are kept (created 0700 on first start).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "fairdeal-data",
        env = "FAIRDEAL_DATA_DIR"
    )]
    data_dir: PathBuf,
    /// The one address every gRPC service is served on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    listen: SocketAddr,
    /// Serve only: no demo table.
    #[arg(long)]
    no_demo: bool,
    /// The demo table's game: Jeu du 10, or French Tarot for four.
    #[arg(long, value_name = "GAME", value_enum, default_value_t = DemoGameArg::JeuDu10)]
    demo_game: DemoGameArg,
    /// Filter of the log lines printed among the demo's (`tracing` syntax).
    #[arg(long, value_name = "FILTER", default_value = "warn")]
    log: String,
    /// Usernames whose logins get the moderator role (chat `RemoveMessage` and `Mute`),
    /// comma-separated, compared caselessly: the auth service's `--moderators`.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        env = "FAIRDEAL_MODERATORS"
    )]
    moderators: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Up(args) => up(args).await,
        Command::Serve { target, args } => {
            if target == serve::ALL {
                let mut all = vec!["fairdeal-server serve --target all".to_owned()];
                all.extend(args);
                let mut up_args = UpCli::parse_from(all).up;
                up_args.no_demo = true;
                return up(up_args).await;
            }
            let service = serve::find(&target)
                .with_context(|| format!("--target {target}: no such service"))?;
            serve::run(service, args).await
        }
        Command::Deployment { root, check } => deployment(&root, check),
    }
}

/// `fairdeal-server deployment`.
fn deployment(root: &std::path::Path, check: bool) -> anyhow::Result<()> {
    use std::io::Write as _;

    use fairdeal_server::deployment as files;
    let mut out = std::io::stdout().lock();
    let generated = files::files(root, fairdeal_server::SERVICES).map_err(anyhow::Error::msg)?;
    if check {
        let stale = files::stale(root, &generated);
        for path in &stale {
            writeln!(out, "differs: {}", path.display())?;
        }
        if !stale.is_empty() {
            anyhow::bail!(
                "{} deployment file(s) differ from the services' DEPLOYMENT: run `cargo run -p \
                 fairdeal-server -- deployment`",
                stale.len()
            );
        }
        return Ok(());
    }
    for path in files::write(root, &generated).map_err(anyhow::Error::msg)? {
        writeln!(out, "wrote {}", path.display())?;
    }
    Ok(())
}

/// `up`'s flags on their own (for `serve --target all`).
#[derive(Debug, Parser)]
struct UpCli {
    #[command(flatten)]
    up: UpArgs,
}

async fn up(args: UpArgs) -> anyhow::Result<()> {
    let mut common = fairdeal_kit::CommonConfig::with_defaults("fairdeal")?;
    common.log = Some(args.log.clone());
    common.log_format = fairdeal_kit::config::LogFormat::Pretty;
    let _telemetry = fairdeal_kit::telemetry::init(&common).context("telemetry")?;

    let platform = Platform::start(&UpOptions {
        data_dir: args.data_dir.clone(),
        listen: args.listen,
        handle_signals: true,
        moderators: args.moderators.clone(),
    })
    .await
    .context("starting the platform")?;
    let out = Output::stdout();
    banner(&platform, &out);

    if !args.no_demo {
        let url = platform.url().to_owned();
        let exports = platform.exports_dir();
        let mailbox = platform.mailbox_dir();
        let log_key = platform.log_key().to_owned();
        let demo_out = out.clone();
        let game = args.demo_game.into();
        tokio::spawn(async move {
            let result = async {
                let mut demo = Demo::connect(&url, &exports, &mailbox, &log_key, demo_out.clone())
                    .await?
                    .playing(game);
                demo.run(STEPS).await
            }
            .await;
            demo_out.line("");
            match result {
                Ok(()) => demo_out.line(format!(
                    "Demo finished. The platform keeps serving at {url} (Ctrl-C stops it)."
                )),
                Err(error) => demo_out.line(format!("Demo failed: {error:#}")),
            }
        });
    }
    platform.run_until_stopped().await.context("serving")?;
    Ok(())
}

fn banner(platform: &Platform, out: &Output) {
    for line in examples::banner(platform) {
        out.line(line);
    }
}

/// `--demo-game`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DemoGameArg {
    /// Jeu du 10 (2 teams of 2).
    JeuDu10,
    /// French Tarot for four.
    Tarot,
}

impl From<DemoGameArg> for DemoGame {
    fn from(game: DemoGameArg) -> Self {
        match game {
            DemoGameArg::JeuDu10 => DemoGame::JeuDu10,
            DemoGameArg::Tarot => DemoGame::Tarot,
        }
    }
}
