//! The grpcurl lines `up` prints: each works as printed, in order, in one shell (a later
//! line uses the variables an earlier one set). The tests run them.

use std::path::Path;

use base64::Engine as _;

use crate::platform::{Platform, reachable};

/// The example account's name, address and password.
pub const USERNAME: &str = "alice";
/// The example account's address.
pub const EMAIL: &str = "alice@example.com";
/// The example account's password (sent base64-encoded: the field is `bytes`).
pub const PASSWORD: &str = "correct horse battery staple";

/// One example: what it shows and the shell line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// What it does.
    pub what: &'static str,
    /// The command line.
    pub command: String,
}

/// The examples against the platform at `addr` (`host:port`) whose data directory is
/// `data_dir`, in order. The first three need nothing; the rest go on from the account the
/// third one registers (its confirmation mail is a file under the data directory).
pub fn grpcurl(addr: &str, data_dir: &Path) -> Vec<Example> {
    let password = base64::engine::general_purpose::STANDARD.encode(PASSWORD);
    let mailbox = data_dir.join(crate::platform::MAILBOX_DIR);
    let bearer = r#"-H "authorization: Bearer $TOKEN""#;
    vec![
        Example {
            what: "list the services (reflection)",
            command: format!("grpcurl -plaintext {addr} list"),
        },
        Example {
            what: "health of the whole server",
            command: format!("grpcurl -plaintext {addr} grpc.health.v1.Health/Check"),
        },
        Example {
            what: "register (the password is base64: the field is bytes)",
            command: format!(
                r#"grpcurl -plaintext -d '{{"username":"{USERNAME}","email":"{EMAIL}","password":"{password}"}}' {addr} fairdeal.auth.v1.AuthService/Register"#
            ),
        },
        Example {
            what: "the confirmation code, from the mail file",
            command: format!(
                r#"CODE=$(grep -hoE '^ *[A-Za-z0-9_-]{{43}}[[:space:]]*$' $(grep -l 'To: {EMAIL}' {}/*.eml) | tr -d ' \r' | tail -n 1)"#,
                mailbox.display()
            ),
        },
        Example {
            what: "confirm the address",
            command: format!(
                r#"grpcurl -plaintext -d "{{\"token\":\"$CODE\"}}" {addr} fairdeal.auth.v1.AuthService/ConfirmEmail"#
            ),
        },
        Example {
            what: "log in and keep the access token",
            command: format!(
                r#"TOKEN=$(grpcurl -plaintext -d '{{"username":"{USERNAME}","password":"{password}"}}' {addr} fairdeal.auth.v1.AuthService/Login | sed -n 's/.*"accessToken": "\(.*\)".*/\1/p')"#
            ),
        },
        Example {
            what: "the lobby",
            command: format!(
                r#"grpcurl -plaintext {bearer} -d '{{}}' {addr} fairdeal.tables.v1.TablesService/ListTables"#
            ),
        },
        Example {
            what: "a table with three bots (seats 1-3), its id kept",
            command: format!(
                r#"TABLE=$(grpcurl -plaintext {bearer} -d '{{"botSeats":[1,2,3]}}' {addr} fairdeal.tables.v1.TablesService/CreateTable | sed -n 's/.*"tableId": "\(.*\)".*/\1/p')"#
            ),
        },
        Example {
            what: "sit at seat 0 (the match starts: the bots fill the others)",
            command: format!(
                r#"grpcurl -plaintext {bearer} -d "{{\"tableId\":\"$TABLE\",\"seat\":0}}" {addr} fairdeal.tables.v1.TablesService/Sit"#
            ),
        },
        Example {
            what: "your view: your hand, whose turn, your legal moves, the version",
            command: format!(
                r#"grpcurl -plaintext {bearer} -d "{{\"tableId\":\"$TABLE\"}}" {addr} fairdeal.tables.v1.TablesService/GetTable"#
            ),
        },
    ]
}

/// How to make a move, after the examples (it needs the version and a legal move the view
/// shows, so it is a pattern rather than a line to paste).
pub fn act_hint(addr: &str) -> String {
    format!(
        r#"grpcurl -plaintext -H "authorization: Bearer $TOKEN" -d "{{\"tableId\":\"$TABLE\",\"expectedVersion\":\"<version>\",\"commandId\":\"move-1\",\"pass\":{{}}}}" {addr} fairdeal.tables.v1.TablesService/Act"#
    )
}

/// What `up` prints about chat moderation: with no moderator, how to name one; with some,
/// who they are and how a moderator mutes a user (a pattern: it needs the user's id).
pub fn moderation(addr: &str, moderators: &[String]) -> Vec<String> {
    if moderators.is_empty() {
        return vec![format!(
            "# chat moderation (RemoveMessage, Mute) needs a moderator: start with `up --moderators {USERNAME}`"
        )];
    }
    vec![
        format!(
            "# moderators (their logins may RemoveMessage and Mute): {}; a moderator mutes a user in the lobby for 10 minutes:",
            moderators.join(", ")
        ),
        format!(
            r#"grpcurl -plaintext -H "authorization: Bearer $TOKEN" -d '{{"userId":"<user id>","channel":"lobby","durationSeconds":600,"reason":"spam"}}' {addr} fairdeal.chat.v1.ChatService/Mute"#
        ),
    ]
}

/// Everything `up` prints when the platform is serving, demo or not: where it is, the
/// grpcurl examples, moderation, the ledger's log key (without which nobody can check an
/// export) and where the secrets file is.
pub fn banner(platform: &Platform) -> Vec<String> {
    let addr = reachable(platform.local_addr()).to_string();
    let mut lines = vec![
        format!(
            "fairdeal is up at {} with {} (data in {})",
            platform.url(),
            crate::SERVICES
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", "),
            platform.data_dir().display()
        ),
        format!(
            "The ledger's log key (to check an export: fairdeal audit <export> --log-key <key>): {}",
            platform.log_key()
        ),
        format!(
            "The seed key, the services' secrets and the ledger's signing key are in {} (keep it private).",
            platform.secrets_file().display()
        ),
        "Try it with grpcurl (https://github.com/fullstorydev/grpcurl), in one shell:".to_owned(),
    ];
    for example in grpcurl(&addr, platform.data_dir()) {
        lines.push(format!("  # {}", example.what));
        lines.push(format!("  {}", example.command));
    }
    lines.push("  # then a move, with the version and a legal move from your view:".to_owned());
    lines.push(format!("  {}", act_hint(&addr)));
    lines.extend(
        moderation(&addr, platform.moderators())
            .into_iter()
            .map(|line| format!("  {line}")),
    );
    lines
}
