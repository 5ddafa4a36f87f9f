//! # Free text other users see
//!
//! A chat line, a moderator's reason, a seed contribution, an audited reveal's operator and
//! justification, a delayed value's source: whatever one user writes and another reads must
//! display as what it is. A few characters make a text display as something else without
//! being seen themselves, and [`check_visible`] is the one rule every parser of such a field
//! applies (refusing, never stripping: the caller learns which character, and what is stored
//! is what was sent):
//!
//! - **Bidi_Control** (PropList.txt): the embeddings, overrides and isolates (U+202A..U+202E,
//!   U+2066..U+2069) reorder the text that follows them, so `U+202E` makes `gnp.exe` display
//!   as `exe.png`; the marks (U+061C, U+200E, U+200F) are invisible and move neutral
//!   characters.
//! - **Default_Ignorable_Code_Point** (DerivedCoreProperties.txt): characters a renderer
//!   shows as nothing: zero-width space, word joiner, invisible operators, the byte order mark,
//!   soft hyphen, Hangul fillers (a blank name), tag characters (a whole hidden ASCII text),
//!   and the unassigned code points reserved as default-ignorable. Kept: the zero-width
//!   non-joiner and joiner (U+200C, U+200D) and the variation selectors (Variation_Selector),
//!   which only select the form of the visible characters around them (Persian and Indic
//!   words, emoji sequences (woman, ZWJ, laptop; a heart with VS16) need them), and tag characters where they
//!   form a subdivision flag (🏴 U+1F3F4, 1 to 7 tag digits or small letters, U+E007F).
//! - The **line and paragraph separators** (U+2028, U+2029, the only characters of general
//!   categories Zl and Zp): not control characters, yet they break a one-line text, so a
//!   line could show a second line it does not have.
//!
//! The properties come from `icu_properties` (ICU4X, the Unicode Consortium's Rust library,
//! with its compiled data), not from a table written here. Control characters (`Cc`) are the
//! callers' own rule (each names it in its messages already); this crate adds what
//! `char::is_control` does not cover.
#![forbid(unsafe_code)]

use icu_properties::CodePointSetData;
use icu_properties::props::{BidiControl, DefaultIgnorableCodePoint, VariationSelector};

/// U+200C ZERO WIDTH NON-JOINER: kept (Persian, Indic scripts).
const ZWNJ: char = '\u{200C}';
/// U+200D ZERO WIDTH JOINER: kept (Indic scripts, emoji ZWJ sequences).
const ZWJ: char = '\u{200D}';
/// U+1F3F4 WAVING BLACK FLAG: the base of the subdivision flags' tag sequences.
const BLACK_FLAG: char = '\u{1F3F4}';
/// U+E007F CANCEL TAG: the end of a tag sequence.
const CANCEL_TAG: char = '\u{E007F}';
/// Most tag characters in a subdivision flag (a CLDR subdivision id: a 2-letter or 3-digit
/// region and 1 to 4 letters or digits, e.g. `gbsct`).
const MAX_FLAG_TAGS: usize = 7;

/// A character a visible text may not contain, as found in one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "must not contain U+{:04X} (bidirectional controls, invisible formatting characters and line separators are refused)",
    u32::from(*.0)
)]
pub struct Hidden(pub char);

/// Whether `c` changes how text displays without being seen itself (see the crate docs).
/// Tag characters count as hidden here; [`check_visible`] accepts them inside a subdivision
/// flag.
pub fn is_hidden(c: char) -> bool {
    if matches!(c, '\u{2028}' | '\u{2029}') {
        return true;
    }
    if CodePointSetData::new::<BidiControl>().contains(c) {
        return true;
    }
    CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        && c != ZWNJ
        && c != ZWJ
        && !CodePointSetData::new::<VariationSelector>().contains(c)
}

/// Checks a text other users will see: the first hidden character (see the crate docs), if
/// any, is the error. Linear in the text; bound the text's length before calling it.
pub fn check_visible(text: &str) -> Result<(), Hidden> {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == BLACK_FLAG {
            // A subdivision flag: tag digits and small letters, then CANCEL TAG.
            let mut tags = 0;
            while let Some(&t) = chars.peek() {
                if !is_flag_tag(t) {
                    break;
                }
                if tags == MAX_FLAG_TAGS {
                    return Err(Hidden(t));
                }
                tags += 1;
                chars.next();
            }
            if tags > 0 {
                match chars.next() {
                    Some(CANCEL_TAG) => {}
                    Some(other) if is_hidden(other) => return Err(Hidden(other)),
                    // A flag's tags left open hide whatever they precede.
                    _ => return Err(Hidden(CANCEL_TAG)),
                }
            }
            continue;
        }
        if is_hidden(c) {
            return Err(Hidden(c));
        }
    }
    Ok(())
}

/// How many characters of a caller's value an error message may quote.
pub const SHOWN_PREFIX: usize = 32;

/// `value` as an error message may quote it: at most [`SHOWN_PREFIX`] characters, control
/// characters escaped (`\n`), hidden ones too (`\u{202e}`, see [`is_hidden`]), `…` when
/// cut. For messages that name a bad value (`unknown deck "tarot7"`) without echoing a
/// megabyte of it back, or text that displays as something else. The one quoting rule of
/// every layer (the kit's `status::shown` is this function).
pub fn shown(value: &str) -> String {
    let mut out = String::new();
    for (count, c) in value.chars().enumerate() {
        if count == SHOWN_PREFIX {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else if is_hidden(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// TAG DIGIT ZERO..NINE and TAG LATIN SMALL LETTER A..Z: what a subdivision id is spelt with.
fn is_flag_tag(c: char) -> bool {
    matches!(c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Bidi_Control=Yes, all twelve (PropList.txt, Unicode 16).
    const BIDI_CONTROLS: [char; 12] = [
        '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
        '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
    ];

    #[test]
    fn bidi_controls_are_refused_wherever_they_are() {
        for c in BIDI_CONTROLS {
            for text in [format!("{c}"), format!("abc{c}def"), format!("gnp{c}.exe")] {
                assert_eq!(
                    check_visible(&text),
                    Err(Hidden(c)),
                    "U+{:04X}",
                    u32::from(c)
                );
            }
        }
        let message = check_visible("x\u{202E}y").unwrap_err().to_string();
        assert!(message.starts_with("must not contain U+202E"), "{message}");
    }

    #[test]
    fn invisible_characters_are_refused() {
        for c in [
            '\u{00AD}',  // soft hyphen
            '\u{034F}',  // combining grapheme joiner
            '\u{115F}',  // Hangul choseong filler
            '\u{180E}',  // Mongolian vowel separator
            '\u{200B}',  // zero width space
            '\u{2060}',  // word joiner
            '\u{2062}',  // invisible times
            '\u{206F}',  // nominal digit shapes
            '\u{3164}',  // Hangul filler
            '\u{FEFF}',  // zero width no-break space (byte order mark)
            '\u{FFA0}',  // halfwidth Hangul filler
            '\u{1BCA0}', // shorthand format letter overlap
            '\u{1D173}', // musical symbol begin beam
            '\u{E0001}', // language tag
            '\u{E0041}', // tag latin capital letter a
            '\u{E0FFF}', // reserved default-ignorable
            '\u{2028}',  // line separator
            '\u{2029}',  // paragraph separator
        ] {
            assert_eq!(
                check_visible(&format!("a{c}b")),
                Err(Hidden(c)),
                "U+{:04X}",
                u32::from(c)
            );
        }
    }

    #[test]
    fn what_people_write_is_accepted() {
        for text in [
            "Good luck, everyone!",
            &"€".repeat(100),
            "🂡🂮🃁",
            "مرحبا بالجميع",
            "שלום",
            "m\u{0650}\u{200C}x", // a ZWNJ between letters (Persian)
            "\u{0915}\u{094D}\u{200D}\u{0937}", // Devanagari with a ZWJ
            "\u{1F469}\u{200D}\u{1F4BB} \u{2764}\u{FE0F} \u{1F44D}\u{1F3FD}", // ZWJ sequence, VS16, skin tone
            "\u{845B}\u{E0100}", // ideographic variation sequence (VS17)
            "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} flag", // Scotland
            "🏴 a plain black flag",
            "tab-free\u{00A0}no-break space",
        ] {
            assert_eq!(check_visible(text), Ok(()), "{text:?}");
        }
    }

    #[test]
    fn tags_outside_a_flag_are_refused() {
        // Hidden ASCII after a visible word, and a flag whose tags never end.
        assert_eq!(
            check_visible("hi\u{E0068}\u{E0069}"),
            Err(Hidden('\u{E0068}'))
        );
        assert_eq!(
            check_visible("🏴\u{E0067}\u{E0062}secret"),
            Err(Hidden(CANCEL_TAG))
        );
        assert_eq!(
            check_visible("🏴\u{E0067}\u{E0062}\u{202E}"),
            Err(Hidden('\u{202E}'))
        );
        // Capital tag letters (ASCII smuggling) are no subdivision id.
        assert_eq!(
            check_visible("🏴\u{E0041}\u{E007F}"),
            Err(Hidden('\u{E0041}'))
        );
        // At most seven tags per flag.
        let long: String = std::iter::once(BLACK_FLAG)
            .chain(std::iter::repeat_n('\u{E0061}', 8))
            .chain(std::iter::once(CANCEL_TAG))
            .collect();
        assert_eq!(check_visible(&long), Err(Hidden('\u{E0061}')));
        // A cancel tag alone is hidden.
        assert_eq!(check_visible("\u{E007F}"), Err(Hidden(CANCEL_TAG)));
    }

    #[test]
    fn shown_values_are_short_and_display_as_what_they_are() {
        assert_eq!(shown("tarot7"), "tarot7");
        assert_eq!(
            shown(&"y".repeat(100)),
            format!("{}…", "y".repeat(SHOWN_PREFIX))
        );
        assert_eq!(shown("a\nb"), "a\\nb");
        assert_eq!(shown("gnp\u{202E}.exe"), "gnp\\u{202e}.exe");
    }

    #[test]
    fn kept_joiners_and_selectors_are_default_ignorable_yet_allowed() {
        for c in [ZWNJ, ZWJ, '\u{FE0F}', '\u{E0100}', '\u{180B}'] {
            assert!(CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c));
            assert!(!is_hidden(c), "U+{:04X}", u32::from(c));
        }
    }
}
