//! Email: what the service writes, how it leaves, and the outbox dispatcher between the two.
//!
//! A handler never sends mail itself. It queues the mail in the outbox table in the same
//! transaction as the change that caused it, then wakes the [`Dispatcher`]; the dispatcher
//! claims due mails (a lease, so two replicas do not both send one), hands them to a
//! [`MailTransport`], and marks them sent or schedules a retry with capped exponential backoff.
//! A slow or failing mail server therefore never blocks nor loses a registration.
//!
//! Transports: [`SmtpTransport`] (lettre, when `--smtp-url` is set) and [`MailboxDir`] (the
//! embedded default: one `.eml` file per mail in a directory; read them with any mail client,
//! or `cat`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fairdeal_authn::Clock;
use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::SecretToken;
use crate::store::{AuthStore, OutgoingMail};

/// Why a mail could not be built or sent.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// An address or header is invalid.
    #[error("invalid mail: {0}")]
    Build(String),
    /// The SMTP server refused or could not be reached.
    #[error("smtp: {0}")]
    Smtp(String),
    /// The mailbox directory could not be written.
    #[error("mailbox: {0}")]
    Io(#[from] std::io::Error),
}

/// Sends one mail.
#[async_trait]
pub trait MailTransport: Send + Sync + fmt::Debug {
    /// Sends `mail` from `from`.
    async fn send(&self, from: &Mailbox, mail: &OutgoingMail) -> Result<(), MailError>;

    /// Erases whatever the transport kept of the mail `mail_id` on the platform (its account
    /// was deleted); nothing to do when it kept nothing or the mail was never sent.
    async fn erase(&self, mail_id: Uuid) -> Result<(), MailError>;
}

fn message(from: &Mailbox, mail: &OutgoingMail) -> Result<Message, MailError> {
    let to: Mailbox = mail
        .to
        .parse()
        .map_err(|e: lettre::address::AddressError| MailError::Build(e.to_string()))?;
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(mail.subject.clone())
        .message_id(Some(format!("<{}@fairdeal>", mail.mail_id)))
        .header(ContentType::TEXT_PLAIN)
        // lettre picks the transfer encoding (quoted-printable for the long link line); the
        // code on a line of its own stays readable verbatim in the raw .eml file.
        .body(mail.body.clone())
        .map_err(|e| MailError::Build(e.to_string()))
}

/// Real delivery over SMTP (`smtp://` with STARTTLS when offered... see [`SmtpTransport::from_url`]).
#[derive(Clone)]
pub struct SmtpTransport {
    /// lettre's pooled async transport.
    inner: AsyncSmtpTransport<Tokio1Executor>,
}

impl fmt::Debug for SmtpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SmtpTransport")
    }
}

impl SmtpTransport {
    /// From lettre's URL form: `smtps://user:pass@host:465` (TLS), `smtp://user:pass@host:587?tls=required`
    /// (STARTTLS), or `smtp://host:25` (plain, for a local relay).
    pub fn from_url(url: &str) -> Result<Self, MailError> {
        let inner = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| MailError::Smtp(e.to_string()))?
            .timeout(Some(Duration::from_secs(20)))
            .build();
        Ok(Self { inner })
    }
}

#[async_trait]
impl MailTransport for SmtpTransport {
    async fn send(&self, from: &Mailbox, mail: &OutgoingMail) -> Result<(), MailError> {
        let message = message(from, mail)?;
        self.inner
            .send(message)
            .await
            .map_err(|e| MailError::Smtp(e.to_string()))?;
        Ok(())
    }

    async fn erase(&self, _mail_id: Uuid) -> Result<(), MailError> {
        // A mail handed to the SMTP server has left the platform (it is the recipient's);
        // this transport keeps no copy.
        Ok(())
    }
}

/// The embedded default: each mail becomes `<dir>/<mail id>.eml` (RFC 5322 text).
#[derive(Debug, Clone)]
pub struct MailboxDir {
    /// Where the files go (created on first use).
    dir: PathBuf,
}

impl MailboxDir {
    /// A mailbox in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

#[async_trait]
impl MailTransport for MailboxDir {
    async fn send(&self, from: &Mailbox, mail: &OutgoingMail) -> Result<(), MailError> {
        let bytes = message(from, mail)?.formatted();
        tokio::fs::create_dir_all(&self.dir).await?;
        // Write then rename: a reader never sees half a mail, and a retry just overwrites.
        let tmp = self.dir.join(format!(".{}.tmp", mail.mail_id));
        let path = self.dir.join(format!("{}.eml", mail.mail_id));
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &path).await?;
        Ok(())
    }

    async fn erase(&self, mail_id: Uuid) -> Result<(), MailError> {
        for name in [format!("{mail_id}.eml"), format!(".{mail_id}.tmp")] {
            match tokio::fs::remove_file(self.dir.join(name)).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Writes the service's mails.
#[derive(Debug, Clone)]
pub struct Composer {
    /// Base of the links in mails (the web front end's address).
    pub public_url: String,
}

impl Composer {
    fn link(&self, path: &str, token: &SecretToken) -> String {
        format!(
            "{}/{path}?token={}",
            self.public_url.trim_end_matches('/'),
            token.expose()
        )
    }

    /// The confirmation mail.
    pub fn confirmation(
        &self,
        to: &str,
        username: &str,
        token: &SecretToken,
        valid_hours: i64,
    ) -> OutgoingMail {
        OutgoingMail {
            mail_id: Uuid::now_v7(),
            to: to.to_owned(),
            subject: "Confirm your fairdeal account".to_owned(),
            body: format!(
                "Hello {username},\n\nconfirm your email address to activate your fairdeal account:\n\n{}\n\n\
                 or give this code to ConfirmEmail:\n\n{}\n\nThe link works once, within {valid_hours} hours.\n\
                 If you did not register, ignore this mail.\n",
                self.link("confirm", token),
                token.expose()
            ),
        }
    }

    /// The password-reset mail.
    pub fn password_reset(
        &self,
        to: &str,
        username: &str,
        token: &SecretToken,
        valid_minutes: i64,
    ) -> OutgoingMail {
        OutgoingMail {
            mail_id: Uuid::now_v7(),
            to: to.to_owned(),
            subject: "Reset your fairdeal password".to_owned(),
            body: format!(
                "Hello {username},\n\nsomeone asked to reset your fairdeal password. To choose a new one:\n\n{}\n\n\
                 or give this code to ResetPassword:\n\n{}\n\nThe link works once, within {valid_minutes} minutes.\n\
                 If it was not you, ignore this mail: your password is unchanged.\n",
                self.link("reset-password", token),
                token.expose()
            ),
        }
    }
}

/// Drains the mail outbox.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    /// The outbox.
    store: Arc<dyn AuthStore>,
    /// Where mails go.
    transport: Arc<dyn MailTransport>,
    /// The sender.
    from: Mailbox,
    /// Leases and backoff read it.
    clock: Arc<dyn Clock>,
    /// Signalled when a mail is queued, so it leaves at once rather than at the next poll.
    wake: Arc<Notify>,
}

/// How long a claimed mail is reserved for the claiming replica.
const LEASE_SECS: i64 = 60;
/// Mails per claim.
const BATCH: u32 = 16;
/// Polling interval when nothing wakes the dispatcher (mails due for retry, other replicas).
const POLL: Duration = Duration::from_secs(2);

impl Dispatcher {
    /// A dispatcher over `store`'s outbox.
    pub fn new(
        store: Arc<dyn AuthStore>,
        transport: Arc<dyn MailTransport>,
        from: Mailbox,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            transport,
            from,
            clock,
            wake: Arc::new(Notify::new()),
        }
    }

    /// The handle to wake it after queueing a mail.
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Its transport (account deletion erases a deleted account's mails through it).
    pub fn transport(&self) -> Arc<dyn MailTransport> {
        self.transport.clone()
    }

    /// Backoff before attempt `attempts + 1`: 5 s doubling, at most an hour.
    fn backoff_secs(attempts: u32) -> i64 {
        (5i64 << attempts.min(10)).min(3600)
    }

    /// Sends every mail due now; returns how many were sent.
    pub async fn send_due(&self) -> Result<usize, crate::store::StoreError> {
        let mut sent = 0;
        loop {
            let now = self.clock.unix_seconds();
            let batch = self.store.claim_mail(now, now + LEASE_SECS, BATCH).await?;
            if batch.is_empty() {
                return Ok(sent);
            }
            for queued in batch {
                let id = queued.mail.mail_id;
                match self.transport.send(&self.from, &queued.mail).await {
                    Ok(()) => {
                        sent += 1;
                        if self.store.mail_sent(id, self.clock.unix_seconds()).await? {
                            tracing::info!(mail_id = %id, attempts = queued.attempts, "mail sent");
                        } else {
                            // Its account was deleted while it was being sent, after the
                            // deletion erased the mails it knew of: erase this copy too.
                            if let Err(e) = self.transport.erase(id).await {
                                tracing::warn!(mail_id = %id, error = %e, "a deleted account's mail not erased");
                            }
                        }
                    }
                    Err(e) => {
                        let retry_at =
                            self.clock.unix_seconds() + Self::backoff_secs(queued.attempts);
                        tracing::warn!(mail_id = %id, attempts = queued.attempts, error = %e, "mail not sent, will retry");
                        self.store.mail_failed(id, retry_at, &e.to_string()).await?;
                    }
                }
            }
        }
    }

    /// Runs until `stop` is cancelled: sends due mails when woken or every couple of seconds.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            if let Err(e) = self.send_due().await {
                tracing::warn!(error = %e, "mail outbox unavailable");
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        assert_eq!(Dispatcher::backoff_secs(0), 5);
        assert_eq!(Dispatcher::backoff_secs(1), 10);
        assert_eq!(Dispatcher::backoff_secs(30), 3600);
    }

    #[tokio::test]
    async fn mailbox_writes_a_readable_eml() {
        let dir = tempfile::tempdir().unwrap();
        let mailbox = MailboxDir::new(dir.path());
        let token = SecretToken::generate().unwrap();
        let mail = Composer {
            public_url: "https://cards.example/".into(),
        }
        .confirmation("eve@example.com", "eve", &token, 24);
        let from: Mailbox = "fairdeal <no-reply@example.com>".parse().unwrap();
        mailbox.send(&from, &mail).await.unwrap();
        let text =
            std::fs::read_to_string(dir.path().join(format!("{}.eml", mail.mail_id))).unwrap();
        assert!(text.contains("To: eve@example.com"));
        assert!(text.contains("Subject: Confirm your fairdeal account"));
        assert!(
            text.lines().any(|line| line == token.expose()),
            "the code stands verbatim on its own line"
        );
        assert!(text.contains("https://cards.example/confirm?token"));

        // Erased (a deleted account's mail): gone; erasing again, or what never was, is fine.
        mailbox.erase(mail.mail_id).await.unwrap();
        assert!(!dir.path().join(format!("{}.eml", mail.mail_id)).exists());
        mailbox.erase(mail.mail_id).await.unwrap();
    }
}
