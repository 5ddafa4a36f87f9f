//! A mail catcher for the native smoke test, doing what deploy/mailcatcher does in the compose
//! stack: an SMTP server on 127.0.0.1 that accepts every mail and writes it, unsent, as
//! `<nanoseconds>.eml` into a directory (the greatest name is the newest mail), where
//! `fairdeal_testkit::code_in_mail` finds the codes.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Serves SMTP on `listener` until the task is dropped, one task per connection.
pub(crate) async fn serve(listener: TcpListener, dir: PathBuf) {
    while let Ok((stream, _)) = listener.accept().await {
        let dir = dir.clone();
        tokio::spawn(async move {
            if let Err(error) = session(stream, dir).await {
                tracing::warn!(%error, "smtp session failed");
            }
        });
    }
}

/// One SMTP session (RFC 5321's minimum: HELO/EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT).
async fn session(stream: TcpStream, dir: PathBuf) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 catcher ESMTP\r\n").await?;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let verb = line
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        match verb.as_str() {
            "EHLO" => write.write_all(b"250-catcher\r\n250 8BITMIME\r\n").await?,
            "HELO" | "MAIL" | "RCPT" | "RSET" | "NOOP" => write.write_all(b"250 OK\r\n").await?,
            "DATA" => {
                write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
                let mut mail = Vec::new();
                loop {
                    line.clear();
                    if lines.read_line(&mut line).await? == 0 {
                        return Ok(());
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    // Dot-stuffing: a leading '.' was doubled by the sender.
                    let text = line.strip_prefix('.').unwrap_or(&line);
                    mail.extend_from_slice(text.as_bytes());
                }
                let nanos = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let name = format!("{nanos:020}.eml");
                let tmp = dir.join(format!(".{name}.tmp"));
                tokio::fs::write(&tmp, &mail).await?;
                tokio::fs::rename(&tmp, dir.join(name)).await?;
                write.write_all(b"250 OK\r\n").await?;
            }
            "QUIT" => {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => write.write_all(b"502 not implemented\r\n").await?,
        }
    }
}
