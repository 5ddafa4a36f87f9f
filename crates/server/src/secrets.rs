//! The all-in-one process's secrets, generated on first start and kept in the data directory
//! (`secrets.toml`, mode 0600, in a 0700 directory) so state survives a restart: the key
//! sealing server seeds at rest, and each service's secret at the auth service (the auth
//! service gets their SHA-256 as `--service-credentials`), and the ledger's checkpoint
//! signing key (its public half, the log key `fairdeal audit --log-key` takes, is derived
//! from it). The auth service's token signing keys live in the database file (0600 too),
//! where its key ring keeps and rotates them.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use fairdeal_kit::ConfigError;
use fairdeal_tlog::{NoteSigner, NoteVerifier};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The file under the data directory.
pub const SECRETS_FILE: &str = "secrets.toml";

/// The name of the ledger's key: the log's origin, in its checkpoints.
pub const LEDGER_KEY_NAME: &str = "fairdeal-up-ledger";

/// Random bytes as hex.
fn random_hex(len: usize) -> anyhow::Result<String> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
    Ok(hex::encode(bytes))
}

/// The secrets of the data directory.
#[derive(Clone, Serialize, Deserialize)]
pub struct Secrets {
    /// The commitment service's `--seed-keys`: `kid:64hex`.
    seed_keys: String,
    /// Each service's secret at the auth service, by service name.
    service_secrets: BTreeMap<String, String>,
    /// The ledger's `--signing-key` (Go note format `PRIVATE+KEY+<name>+<id>+<base64>`);
    /// empty in a file written before the ledger joined, and then generated.
    #[serde(default)]
    ledger_signing_key: String,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("services", &self.service_secrets.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Secrets {
    /// Reads `secrets.toml` under `dir`, creating it (or adding a secret for a service that
    /// has none yet) with fresh random values.
    pub fn load_or_create<'a>(
        dir: &Path,
        services: impl IntoIterator<Item = &'a str>,
    ) -> anyhow::Result<Secrets> {
        let path = dir.join(SECRETS_FILE);
        let mut secrets = match fs::read_to_string(&path) {
            Ok(text) => toml::from_str::<Secrets>(&text)
                .with_context(|| format!("reading {}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Secrets {
                seed_keys: format!("k1:{}", random_hex(32)?),
                service_secrets: BTreeMap::new(),
                ledger_signing_key: String::new(),
            },
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let mut changed = !path.exists();
        if secrets.ledger_signing_key.is_empty() {
            let mut seed = zeroize::Zeroizing::new([0u8; 32]);
            getrandom::fill(seed.as_mut_slice())
                .map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
            let signer =
                NoteSigner::from_seed(LEDGER_KEY_NAME, &seed).context("the ledger's key name")?;
            secrets.ledger_signing_key = signer.to_key_string().as_str().to_owned();
            changed = true;
        }
        for name in services {
            if !secrets.service_secrets.contains_key(name) {
                secrets
                    .service_secrets
                    .insert(name.to_owned(), random_hex(24)?);
                changed = true;
            }
        }
        if changed {
            let text = toml::to_string(&secrets).context("writing the secrets")?;
            write_private(&path, text.as_bytes())?;
        }
        Ok(secrets)
    }

    /// The seed keys.
    pub fn seed_keys(&self) -> &str {
        &self.seed_keys
    }

    /// The ledger's checkpoint signing key (secret).
    pub fn ledger_signing_key(&self) -> &str {
        &self.ledger_signing_key
    }

    /// The ledger's log key (public): `<name>+<key id>+<base64>`, for `fairdeal audit
    /// --log-key`.
    pub fn log_key(&self) -> anyhow::Result<NoteVerifier> {
        let signer = NoteSigner::parse(&self.ledger_signing_key)
            .map_err(|e| anyhow::anyhow!("the ledger's signing key in {SECRETS_FILE}: {e}"))?;
        Ok(signer.verifier())
    }

    /// Service `name`'s secret.
    pub fn service_secret(&self, name: &str) -> Result<&str, ConfigError> {
        self.service_secrets
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| ConfigError::invalid("service_secret", format!("none for {name}")))
    }

    /// The auth service's `--service-credentials`: `name:sha256hex` of every service secret.
    pub fn service_credentials(&self) -> String {
        self.service_secrets
            .iter()
            .map(|(name, secret)| {
                format!(
                    "{name}:{}",
                    hex::encode(sha2::Sha256::digest(secret.as_bytes()))
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Creates `dir` (and its parents) readable by the owner only; an existing directory keeps
/// its permissions.
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

/// Creates `path` empty with mode 0600 unless it exists (SQLite then opens it, and gives its
/// journal files the same mode).
pub fn create_private_file(path: &Path) -> anyhow::Result<()> {
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}

/// Writes `bytes` to `path` with mode 0600: a temporary file renamed over it, so a crash
/// leaves the old or the new file, never half of one.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp: PathBuf = path.with_extension("tmp");
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    // An older temporary file keeps its mode through `open`: set it again.
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn secrets_are_created_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = Secrets::load_or_create(dir.path(), ["auth", "tables"]).unwrap();
        let path = dir.path().join(SECRETS_FILE);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = Secrets::load_or_create(dir.path(), ["auth", "tables", "chat"]).unwrap();
        assert_eq!(first.seed_keys(), again.seed_keys());
        assert_eq!(
            first.service_secret("tables").unwrap(),
            again.service_secret("tables").unwrap()
        );
        assert!(again.service_secret("chat").is_ok());
        assert!(first.service_secret("chat").is_err());
        let credentials = again.service_credentials();
        assert_eq!(credentials.split(',').count(), 3);
        assert!(!credentials.contains(again.service_secret("auth").unwrap()));
        assert!(!format!("{again:?}").contains(again.seed_keys()));
        assert!(!format!("{again:?}").contains(again.ledger_signing_key()));
        assert_eq!(first.ledger_signing_key(), again.ledger_signing_key());
        assert_eq!(
            first.log_key().unwrap().to_string(),
            again.log_key().unwrap().to_string()
        );
        assert!(
            again
                .log_key()
                .unwrap()
                .to_string()
                .starts_with(LEDGER_KEY_NAME)
        );
        // A file written before the ledger joined gains a key on the next start.
        let text = fs::read_to_string(&path).unwrap();
        let old: String = text
            .lines()
            .filter(|l| !l.starts_with("ledger_signing_key"))
            .map(|l| format!("{l}\n"))
            .collect();
        fs::write(&path, old).unwrap();
        let upgraded = Secrets::load_or_create(dir.path(), ["auth", "tables", "chat"]).unwrap();
        assert_eq!(upgraded.seed_keys(), again.seed_keys());
        assert!(upgraded.log_key().is_ok());
        assert_ne!(upgraded.ledger_signing_key(), again.ledger_signing_key());
    }
}
