//! Strings that came from outside headroom (a network peer's congestion control or version,
//! a document's fields, sysfs names and USB strings) on their way to a terminal or a Markdown
//! file: the one mechanism every renderer and the terminal writer use, so no kind of output
//! lets a peer clear the screen, set the terminal's title, change its colours or break a
//! table.
//!
//! - [`terminal`]: control characters (C0 but newline and tab, DEL, C1) and the Unicode
//!   bidirectional overrides become visible escapes (`\x1b`, `\u{202e}`); whole texts.
//! - [`line`]: the same for one value that must stay on its line (newline and tab too).
//! - [`markdown`]: a [`line`] that also cannot end a table cell (`|`), open HTML (`<`) or
//!   make a heading (a leading `#`); [`markdown_cell`] for a table's header.
//! - [`html`]: a [`terminal`] text with HTML's five special characters as references.
//!
//! headroom's own colours never travel as escape sequences: a renderer's
//! [`crate::terminal::Style`] writes a [`Sgr::mark`] (a private-use character and 128 random
//! bits drawn when the process starts), and the terminal writer's [`for_terminal`] escapes
//! every control character of the whole text first, then turns only those marks into colour
//! sequences. A string from outside cannot carry a mark it cannot know, so whatever it holds
//! (a cursor move, a title, or headroom's own bold, red and reset) reaches the terminal as
//! visible text, whether a renderer cleaned it or not.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters that a terminal interprets instead of showing: C0 controls, DEL, C1 controls
/// (U+0080 to U+009F: U+009B is CSI on some terminals) and the bidirectional embeddings,
/// overrides and isolates (U+202A to U+202E, U+2066 to U+2069) that reorder what is shown.
fn hidden(c: char) -> bool {
    c.is_control()
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

fn escape_where(s: &str, bad: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            if (c as u32) < 0x80 {
                let _ = write!(out, "\\x{:02x}", c as u32);
            } else {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A text for a terminal: every control character but newline and tab escaped.
pub fn terminal(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| hidden(c) && c != '\n' && c != '\t')
}

/// One value for one line: every control character escaped, newline and tab too.
pub fn line(s: &str) -> Cow<'_, str> {
    escape_where(s, hidden)
}

/// One value inside a Markdown line (a table cell, a heading's or a list item's text after
/// its marker): a [`markdown_cell`]. A `#` there is text (`#13`, a history id, reads as
/// typed).
pub fn markdown(s: &str) -> String {
    markdown_cell(s)
}

/// A value that begins a Markdown line: a [`markdown`] value in which a leading `#` cannot
/// make a heading.
pub fn markdown_line_start(s: &str) -> String {
    let m = markdown(s);
    match m.strip_prefix('#') {
        Some(rest) => format!("\\#{rest}"),
        None => m,
    }
}

/// A value inside a Markdown table's cell (a header's title): a [`line`] in which `|` cannot
/// end the cell, `<` cannot open HTML and a backslash before punctuation stays a backslash
/// (so `\|` cannot turn the escape of its `|` into a backslash); a leading `#` stays (a cell
/// makes no heading).
pub fn markdown_cell(s: &str) -> String {
    let l = line(s);
    let mut out = String::with_capacity(l.len());
    let mut chars = l.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(char::is_ascii_punctuation) => out.push_str("\\\\"),
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
    out
}

/// A value in HTML text or an attribute: every control character but newline and tab
/// escaped as for [`terminal`] (an HTML file is also read with `cat`), then `&`, `<`, `>`,
/// `"` and `'` as character references.
pub fn html(s: &str) -> String {
    let t = terminal(s);
    let mut o = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A label value of the Prometheus and OpenMetrics texts: every control character but
/// newline becomes visible text (`\x1b`) in the value itself, which the encoder then writes
/// with the format's own escapes (`\\x1b`; the newline as `\n`). The exposition holds no
/// character a terminal acts on, and stays what promtool and Prometheus parse: the terminal's
/// escaping of the finished text would write `\x1b`, an escape the format does not have.
pub fn label_value(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| hidden(c) && c != '\n')
}

/// A JSON text that a terminal can show: serde_json writes the C0 controls as `\u00XX` but
/// leaves DEL, the C1 controls and the bidirectional overrides raw (JSON allows them); here
/// they are `\uXXXX` escapes too. Outside its strings a JSON text is ASCII, so only strings
/// change, and they read back the same. (The terminal's escaping would write `\u{9b}`, which
/// is not JSON.)
pub fn json(s: &str) -> Cow<'_, str> {
    // Newline and tab only appear between tokens (serde_json escapes them in strings).
    let bad = |c: char| hidden(c) && c != '\n' && c != '\t';
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// headroom's own colours: the only escape sequences its terminal text may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sgr {
    Bold,
    Yellow,
    Red,
    Reset,
}

impl Sgr {
    const ALL: [Sgr; 4] = [Sgr::Bold, Sgr::Yellow, Sgr::Red, Sgr::Reset];

    /// The ECMA-48 SGR sequence (ESC [ n m): 1 bold, 33 yellow, 31 red, 0 reset.
    fn ansi(self) -> &'static str {
        match self {
            Sgr::Bold => "\x1b[1m",
            Sgr::Yellow => "\x1b[33m",
            Sgr::Red => "\x1b[31m",
            Sgr::Reset => "\x1b[0m",
        }
    }

    /// What a renderer writes for this colour: U+E000 (private use, shown as nothing
    /// meaningful and not a control character, so [`terminal`] keeps it), this process's
    /// secret in 32 hex digits, and the colour's digit. Only [`for_terminal`] turns it into
    /// the sequence.
    pub fn mark(self) -> &'static str {
        &marks()[self as usize]
    }
}

/// The four marks of this process. The secret is 128 bits of std's `RandomState`, whose
/// SipHash keys come from the kernel's random source (getrandom(2)) once per process thread:
/// nothing outside the process (a peer, a document written earlier, sysfs) can know it, and a
/// mark copied from another run's output does not match this one.
fn marks() -> &'static [String; 4] {
    static MARKS: std::sync::OnceLock<[String; 4]> = std::sync::OnceLock::new();
    MARKS.get_or_init(|| {
        use std::hash::BuildHasher as _;
        let keys = std::collections::hash_map::RandomState::new();
        let secret = (u128::from(keys.hash_one(0u8)) << 64) | u128::from(keys.hash_one(1u8));
        Sgr::ALL.map(|c| format!("\u{e000}{secret:032x}{}", c as u8))
    })
}

/// A whole output for a terminal: every control character escaped ([`terminal`]), wherever
/// it came from; then headroom's own colour marks ([`Sgr::mark`]) become their sequences when
/// `colour` is on, and nothing when it is off.
pub fn for_terminal(s: &str, colour: bool) -> Cow<'_, str> {
    let safe = terminal(s);
    if !safe.contains('\u{e000}') {
        return safe;
    }
    let mut out = safe.into_owned();
    for c in Sgr::ALL {
        out = out.replace(c.mark(), if colour { c.ansi() } else { "" });
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // What a hostile peer sends: clear the screen, set the window title.
    const HOSTILE: &str = "bbr\x1b[2J\x1b]0;TITLE\x07";

    #[test]
    fn control_characters_become_visible() {
        assert_eq!(terminal(HOSTILE), "bbr\\x1b[2J\\x1b]0;TITLE\\x07");
        assert_eq!(terminal("a\nb\tc\r"), "a\nb\tc\\x0d");
        assert_eq!(line("a\nb"), "a\\x0ab");
        assert_eq!(
            line("x\u{9b}2J\u{202e}y\u{7f}"),
            "x\\u{9b}2J\\u{202e}y\\x7f"
        );
        assert!(matches!(terminal("plain, ünïcode"), Cow::Borrowed(_)));
    }

    #[test]
    fn markdown_cells_stay_cells() {
        assert_eq!(
            markdown_line_start("# a|b <script>\nnext"),
            "\\# a\\|b &lt;script>\\x0anext"
        );
        assert_eq!(markdown("#13"), "#13");
        assert_eq!(markdown(HOSTILE), "bbr\\x1b[2J\\x1b]0;TITLE\\x07");
        assert_eq!(markdown_cell("#|<"), "#\\|&lt;");
        // A backslash of the value cannot escape the escape of its `|`; \x1b stays as it is.
        assert_eq!(markdown_cell("a\\|b\\x\x1b"), "a\\\\\\|b\\x\\x1b");
    }

    #[test]
    fn html_text_has_no_markup_and_no_control_character() {
        assert_eq!(
            html("<b a='1'>&\"\x1b]0;T\x07\n"),
            "&lt;b a=&#39;1&#39;&gt;&amp;&quot;\\x1b]0;T\\x07\n"
        );
    }

    #[test]
    fn machine_formats_escape_in_their_own_syntax() {
        assert_eq!(
            label_value("a\x1b]0;T\x07\nb\u{9b}"),
            "a\\x1b]0;T\\x07\nb\\u{9b}"
        );
        let value = serde_json::json!({ "a": format!("{HOSTILE}\u{9b}\u{202e}\u{7f}\n") });
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = json(&text);
        assert!(!safe.chars().any(|c| hidden(c) && c != '\n'), "{safe}");
        assert_eq!(safe.lines().count(), 3, "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn only_headroom_colours_pass() {
        // headroom's own bold around a title, and a peer's string that holds the very
        // sequences headroom writes (bold, red, yellow, reset) besides its screen clearing.
        let own = format!(
            "{}title{} and a peer's ",
            Sgr::Bold.mark(),
            Sgr::Reset.mark()
        );
        let forged = "\x1b[1m\x1b[31m\x1b[33mred\x1b[0m";
        let text = format!("{own}{HOSTILE}{forged}");
        assert_eq!(
            for_terminal(&text, true),
            "\x1b[1mtitle\x1b[0m and a peer's bbr\\x1b[2J\\x1b]0;TITLE\\x07\
             \\x1b[1m\\x1b[31m\\x1b[33mred\\x1b[0m"
        );
        assert_eq!(
            for_terminal(&text, false),
            "title and a peer's bbr\\x1b[2J\\x1b]0;TITLE\\x07\\x1b[1m\\x1b[31m\\x1b[33mred\\x1b[0m"
        );
        // A mark with another secret (another run's, or a guess) is text, not colour.
        let guess = format!("\u{e000}{:032x}1", 0u128);
        assert_eq!(for_terminal(&guess, true), guess);
    }
}
