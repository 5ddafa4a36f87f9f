//! Reading the mails a service wrote to its mailbox directory (the `--mailbox-dir` transport
//! used when no SMTP server is configured): the one-time code of the newest mail to an
//! address.

use std::path::Path;

/// Length of a one-time code in a mail: 32 random bytes, base64url without padding.
const CODE_LENGTH: usize = 43;

/// The code of the newest `.eml` mail in `dir` addressed to `to` whose text contains
/// `subject_word` (e.g. `Confirm`, `Reset`); `None` until such a mail is written.
///
/// Mail file names are UUIDv7s, so the greatest name is the newest mail.
pub fn code_in_mail(dir: &Path, to: &str, subject_word: &str) -> Option<String> {
    let recipient = format!("To: {to}");
    let mut found: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "eml") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !text.contains(&recipient) || !text.contains(subject_word) {
            continue;
        }
        let code = text.lines().map(str::trim).find(|line| {
            line.len() == CODE_LENGTH
                && line
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        if let Some(code) = code {
            let name = path.file_name()?.to_string_lossy().into_owned();
            found.push((name, code.to_owned()));
        }
    }
    found.sort();
    found.pop().map(|(_, code)| code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_matching_mail_gives_the_code() {
        let dir = std::env::temp_dir().join(format!("testkit-mail-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).unwrap();
        let code = |c: char| c.to_string().repeat(CODE_LENGTH);
        let mail = |to: &str, subject: &str, code: &str| {
            format!("To: {to}\r\nSubject: {subject}\r\n\r\nYour code:\r\n  {code}\r\n")
        };
        assert_eq!(code_in_mail(&dir, "a@example.com", "Confirm"), None);
        std::fs::write(
            dir.join("01.eml"),
            mail("a@example.com", "Confirm", &code('a')),
        )
        .unwrap();
        std::fs::write(
            dir.join("02.eml"),
            mail("a@example.com", "Confirm", &code('b')),
        )
        .unwrap();
        std::fs::write(
            dir.join("03.eml"),
            mail("a@example.com", "Reset", &code('c')),
        )
        .unwrap();
        std::fs::write(
            dir.join("04.eml"),
            mail("b@example.com", "Confirm", &code('d')),
        )
        .unwrap();
        std::fs::write(
            dir.join("05.txt"),
            mail("a@example.com", "Confirm", &code('e')),
        )
        .unwrap();
        assert_eq!(
            code_in_mail(&dir, "a@example.com", "Confirm"),
            Some(code('b'))
        );
        assert_eq!(
            code_in_mail(&dir, "a@example.com", "Reset"),
            Some(code('c'))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
