//! The chat's rules, pure: channel names, message text, moderation reasons and mute
//! durations, each parsed once into a type that cannot hold an invalid value.

use std::fmt;

use fairdeal_eventstore::{EventError, StreamId};
use uuid::Uuid;

/// Longest message, in characters, after trimming.
pub const MAX_TEXT_CHARS: usize = 500;
/// Longest moderation reason, in characters.
pub const MAX_REASON_CHARS: usize = 200;
/// Longest mute: 30 days.
pub const MAX_MUTE_SECONDS: u32 = 30 * 86_400;
/// Stream category of the channels' streams (`chat-lobby`, `chat-table-<uuid>`).
pub const CHANNEL_CATEGORY: &str = "chat";
/// Stream category of a user's mutes (`chatmute-<uuid>`).
pub const MUTE_CATEGORY: &str = "chatmute";

/// A chat channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Every logged-in player.
    Lobby,
    /// A table's seated players and spectators.
    Table(Uuid),
}

/// Why a channel name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// Nothing given.
    #[error("is required (`lobby` or `table-<uuid>`)")]
    Empty,
    /// Neither form.
    #[error("must be `lobby` or `table-<uuid>`")]
    Unknown,
}

impl Channel {
    /// Parses `lobby` or `table-<uuid>` (the UUID in its hyphenated form).
    pub fn parse(name: &str) -> Result<Self, ChannelError> {
        if name.is_empty() {
            return Err(ChannelError::Empty);
        }
        if name == "lobby" {
            return Ok(Channel::Lobby);
        }
        // 36 characters: only the hyphenated form, so one table has one channel name.
        match name.strip_prefix("table-") {
            Some(id) if id.len() == 36 => Uuid::try_parse(id)
                .map(Channel::Table)
                .map_err(|_| ChannelError::Unknown),
            _ => Err(ChannelError::Unknown),
        }
    }

    /// The channel's event stream.
    pub fn stream(&self) -> Result<StreamId, EventError> {
        StreamId::of(CHANNEL_CATEGORY, self)
    }

    /// The correlation id of the channel's events: the table id, or `lobby`.
    pub fn correlation(&self) -> String {
        match self {
            Channel::Lobby => "lobby".to_owned(),
            Channel::Table(id) => id.to_string(),
        }
    }

    /// The channel whose stream is `stream`, if it is a channel's.
    pub fn of_stream(stream: &str) -> Option<Self> {
        stream
            .strip_prefix(CHANNEL_CATEGORY)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|name| Self::parse(name).ok())
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Channel::Lobby => f.write_str("lobby"),
            Channel::Table(id) => write!(f, "table-{}", id.hyphenated()),
        }
    }
}

/// Why a text (a message or a reason) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// Nothing left after trimming.
    #[error("must not be empty (after trimming)")]
    Empty,
    /// Too long.
    #[error("must be at most {max} characters (after trimming)")]
    TooLong {
        /// The bound.
        max: usize,
    },
    /// A control character (newlines included: a message is one line).
    #[error("must not contain control characters")]
    Control,
    /// A bidirectional control, invisible formatting character or line separator
    /// (`fairdeal_text::check_visible`): the text would display as something it is not.
    #[error(transparent)]
    Hidden(#[from] fairdeal_text::Hidden),
}

/// A message's text: trimmed, 1 to 500 characters, no control characters, nothing that
/// displays as something else (bidirectional controls, invisible formatting characters, line
/// separators).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageText(String);

impl MessageText {
    /// Trims `raw` and checks it.
    pub fn parse(raw: &str) -> Result<Self, TextError> {
        let text = Self::recorded(raw)?;
        // On what was sent: a trailing line separator is refused, not trimmed away.
        fairdeal_text::check_visible(raw)?;
        Ok(text)
    }

    /// Trims `raw` and checks it by the rules of a stored line: as [`MessageText::parse`] but
    /// for the invisible-character rule, which came later (a line posted before it still
    /// opens and is shown as it was stored).
    pub fn recorded(raw: &str) -> Result<Self, TextError> {
        // Checked before trimming so a long input costs no more than the bound (and a
        // trailing control character is refused, not trimmed away).
        if raw.chars().any(char::is_control) {
            return Err(TextError::Control);
        }
        let text = raw.trim();
        if text.is_empty() {
            return Err(TextError::Empty);
        }
        if text.chars().count() > MAX_TEXT_CHARS {
            return Err(TextError::TooLong {
                max: MAX_TEXT_CHARS,
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text after `filter` masked words in it; still a valid text (a mask never adds
    /// control characters, nor empties a message).
    pub fn filtered(self, filter: impl FnOnce(&str) -> String) -> Self {
        match Self::parse(&filter(&self.0)) {
            Ok(masked) => masked,
            Err(_) => self,
        }
    }
}

/// A moderator's reason: 0 to 200 characters, no control characters, nothing that displays
/// as something else.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reason(String);

impl Reason {
    /// Trims `raw` and checks it (empty is allowed).
    pub fn parse(raw: &str) -> Result<Self, TextError> {
        let reason = Self::recorded(raw)?;
        fairdeal_text::check_visible(raw)?;
        Ok(reason)
    }

    /// A reason as a stored event records it: [`Reason::parse`] without the later
    /// invisible-character rule.
    pub fn recorded(raw: &str) -> Result<Self, TextError> {
        if raw.chars().any(char::is_control) {
            return Err(TextError::Control);
        }
        let text = raw.trim();
        if text.chars().count() > MAX_REASON_CHARS {
            return Err(TextError::TooLong {
                max: MAX_REASON_CHARS,
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The reason.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A mute's length, 1 second to 30 days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MuteDuration(u32);

/// A mute length out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be 1 to {MAX_MUTE_SECONDS} seconds (30 days)")]
pub struct MuteDurationError;

impl MuteDuration {
    /// Checks `seconds`.
    pub fn parse(seconds: u32) -> Result<Self, MuteDurationError> {
        if (1..=MAX_MUTE_SECONDS).contains(&seconds) {
            Ok(Self(seconds))
        } else {
            Err(MuteDurationError)
        }
    }

    /// The end of a mute starting at `now` (Unix seconds).
    pub fn until(self, now: i64) -> i64 {
        now.saturating_add(i64::from(self.0))
    }
}

/// Where a mute applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MuteScope {
    /// Every channel.
    Everywhere,
    /// One channel.
    Channel(Channel),
}

impl MuteScope {
    /// The stored form: the channel's name, or empty for every channel.
    pub fn stored(&self) -> String {
        match self {
            MuteScope::Everywhere => String::new(),
            MuteScope::Channel(channel) => channel.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn channels_parse_and_print() {
        assert_eq!(Channel::parse("lobby"), Ok(Channel::Lobby));
        let id = Uuid::now_v7();
        let name = format!("table-{id}");
        assert_eq!(Channel::parse(&name), Ok(Channel::Table(id)));
        assert_eq!(Channel::Table(id).to_string(), name);
        assert_eq!(
            Channel::Table(id).stream().unwrap().as_str(),
            format!("chat-table-{id}")
        );
        assert_eq!(
            Channel::of_stream(&format!("chat-table-{id}")),
            Some(Channel::Table(id))
        );
        assert_eq!(Channel::of_stream("chat-lobby"), Some(Channel::Lobby));
        assert_eq!(Channel::of_stream("table-x"), None);
        assert_eq!(Channel::parse(""), Err(ChannelError::Empty));
        for bad in [
            "Lobby",
            "lobby ",
            "table-",
            "table-nope",
            &format!("table-{}", id.simple()),
            &format!("table-{}", id.urn()),
            &format!("table-{{{id}}}"),
            "general",
        ] {
            assert_eq!(Channel::parse(bad), Err(ChannelError::Unknown), "{bad}");
        }
    }

    #[test]
    fn texts_are_trimmed_and_bounded() {
        assert_eq!(MessageText::parse("  hi ").unwrap().as_str(), "hi");
        assert_eq!(MessageText::parse("   "), Err(TextError::Empty));
        assert_eq!(MessageText::parse(""), Err(TextError::Empty));
        assert_eq!(MessageText::parse("a\nb"), Err(TextError::Control));
        assert_eq!(MessageText::parse("a\u{0}"), Err(TextError::Control));
        assert_eq!(MessageText::parse("a\u{7f}"), Err(TextError::Control));
        assert_eq!(MessageText::parse("a\u{85}"), Err(TextError::Control));
        let max = "é".repeat(MAX_TEXT_CHARS);
        assert!(MessageText::parse(&format!("  {max}  ")).is_ok());
        assert_eq!(
            MessageText::parse(&format!("{max}x")),
            Err(TextError::TooLong { max: 500 })
        );
        assert!(Reason::parse("").is_ok());
        assert!(Reason::parse(&"r".repeat(201)).is_err());
        assert!(Reason::parse("a\tb").is_err());
    }

    #[test]
    fn texts_others_read_cannot_display_as_something_else() {
        let hidden = |c: char| TextError::Hidden(fairdeal_text::Hidden(c));
        // The right-to-left override that shows "txt.exe" as "exe.txt", and the others.
        assert_eq!(
            MessageText::parse("see txt\u{202E}exe.png"),
            Err(hidden('\u{202E}'))
        );
        assert_eq!(MessageText::parse("a\u{2066}b"), Err(hidden('\u{2066}')));
        assert_eq!(MessageText::parse("a\u{200B}b"), Err(hidden('\u{200B}')));
        // Not trimmed away: what was sent is judged.
        assert_eq!(MessageText::parse("hi\u{2028}"), Err(hidden('\u{2028}')));
        assert_eq!(
            MessageText::parse("x\u{202E}").unwrap_err().to_string(),
            "must not contain U+202E (bidirectional controls, invisible formatting characters and line separators are refused)"
        );
        assert_eq!(Reason::parse("spam\u{202E}"), Err(hidden('\u{202E}')));
        assert_eq!(Reason::parse("\u{FEFF}"), Err(hidden('\u{FEFF}')));
        // Emoji sequences and joiners are text.
        assert!(MessageText::parse("gg \u{1F469}\u{200D}\u{1F4BB} \u{2764}\u{FE0F}").is_ok());
        // A stored line or reason written before the rule still reads back.
        assert!(MessageText::recorded("old\u{202E}line").is_ok());
        assert!(Reason::recorded("old\u{202E}reason").is_ok());
    }

    #[test]
    fn mutes_are_bounded() {
        assert!(MuteDuration::parse(0).is_err());
        assert!(MuteDuration::parse(MAX_MUTE_SECONDS + 1).is_err());
        assert_eq!(MuteDuration::parse(60).unwrap().until(1_000), 1_060);
        assert_eq!(MuteScope::Everywhere.stored(), "");
        assert_eq!(MuteScope::Channel(Channel::Lobby).stored(), "lobby");
    }

    #[test]
    fn a_filter_cannot_break_a_text() {
        let text = MessageText::parse("hello").unwrap();
        assert_eq!(text.clone().filtered(|_| "\n".into()).as_str(), "hello");
        assert_eq!(text.filtered(|t| t.replace('l', "*")).as_str(), "he**o");
    }

    proptest! {
        #[test]
        fn an_accepted_text_is_valid(raw in "\\PC{0,600}") {
            if let Ok(text) = MessageText::parse(&raw) {
                let s = text.as_str();
                prop_assert_eq!(s, s.trim());
                prop_assert!(!s.is_empty());
                prop_assert!(s.chars().count() <= MAX_TEXT_CHARS);
                prop_assert!(!s.chars().any(char::is_control));
                // Parsing is idempotent.
                prop_assert_eq!(MessageText::parse(s).unwrap(), text.clone());
            }
        }

        #[test]
        fn channel_names_round_trip(bytes in any::<[u8; 16]>()) {
            let channel = Channel::Table(Uuid::from_bytes(bytes));
            prop_assert_eq!(Channel::parse(&channel.to_string()), Ok(channel));
            prop_assert_eq!(Channel::of_stream(channel.stream().unwrap().as_str()), Some(channel));
        }
    }
}
