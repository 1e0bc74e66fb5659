//! Strings that came from outside headroom (a network peer's congestion control or version,
//! a document's fields, sysfs names and USB strings) on their way to a terminal or a Markdown
//! file: the one mechanism every renderer and the terminal writer use, so no kind of output
//! lets a peer clear the screen, set the terminal's title or break a table.
//!
//! - [`terminal`]: control characters (C0 but newline and tab, DEL, C1) and the Unicode
//!   bidirectional overrides become visible escapes (`\x1b`, `\u{202e}`); whole texts.
//! - [`line`]: the same for one value that must stay on its line (newline and tab too).
//! - [`markdown`]: a [`line`] that also cannot end a table cell (`|`), open HTML (`<`) or
//!   make a heading (a leading `#`).
//!
//! The terminal writer passes every text through [`for_terminal`], which keeps only
//! headroom's own colours ([`crate::terminal::Style`]'s four SGR sequences) and escapes every
//! other ESC, so a peer string cannot move the cursor, clear the screen or set a title even
//! where a renderer forgot to clean it.

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

/// One value in Markdown (a table cell, a list item): a [`line`] in which `|` cannot end a
/// cell, `<` cannot open HTML and a leading `#` cannot make a heading.
pub fn markdown(s: &str) -> String {
    let l = line(s);
    let mut out = String::with_capacity(l.len());
    for (i, c) in l.chars().enumerate() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '#' if i == 0 => out.push_str("\\#"),
            c => out.push(c),
        }
    }
    out
}

/// The escape sequences headroom's own renderers write ([`crate::terminal::Style`]): bold,
/// yellow, red and reset.
const OWN_SGR: [&str; 4] = ["\x1b[1m", "\x1b[33m", "\x1b[31m", "\x1b[0m"];

/// A whole output for a terminal: as [`terminal`], except headroom's own colour sequences
/// when `colour` is on. Those four (bold, yellow, red, reset) are all a string from outside
/// could still pass: none moves the cursor, erases, hides text or sets a title.
pub fn for_terminal(s: &str, colour: bool) -> Cow<'_, str> {
    if !colour || !s.contains('\x1b') {
        return terminal(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&terminal(&rest[..at]));
        let tail = &rest[at..];
        match OWN_SGR.iter().find(|q| tail.starts_with(**q)) {
            Some(q) => {
                out.push_str(q);
                rest = &tail[q.len()..];
            }
            None => {
                out.push_str("\\x1b");
                rest = &tail[1..];
            }
        }
    }
    out.push_str(&terminal(rest));
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // What issue 22 item 4's peer sent: clear the screen, set the window title.
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
            markdown("# a|b <script>\nnext"),
            "\\# a\\|b &lt;script>\\x0anext"
        );
        assert_eq!(markdown(HOSTILE), "bbr\\x1b[2J\\x1b]0;TITLE\\x07");
    }

    #[test]
    fn only_headroom_colours_pass() {
        let own = "\x1b[1mtitle\x1b[0m and a peer's ";
        let text = format!("{own}{HOSTILE}");
        assert_eq!(
            for_terminal(&text, true),
            format!("{own}bbr\\x1b[2J\\x1b]0;TITLE\\x07")
        );
        assert_eq!(
            for_terminal(&text, false),
            "\\x1b[1mtitle\\x1b[0m and a peer's bbr\\x1b[2J\\x1b]0;TITLE\\x07"
        );
    }
}
