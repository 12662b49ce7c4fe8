//! Text from peers and files, made safe to show. A server's error reply,
//! an agent's note, a label, a program's output: any of them may hold
//! terminal control sequences (`ESC ] 0;title BEL` retitles a tmux pane,
//! `ESC [2J` clears the screen), bidi overrides that make a line read
//! differently than it is, or bytes that are not UTF-8. One function,
//! [`visible`], shows every such character as a visible escape (`\x1b`,
//! `\u{202e}`, `\xff`), and every output a person reads (the terminal,
//! Markdown, CSV) passes through it; [`md_cell`] and [`one_line`] add what
//! a table cell and a single line need.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal or a document raw: C0 controls
/// but newline and tab, DEL, C1 controls, and the bidirectional
/// formatting characters (embeddings, overrides, isolates, marks).
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every unsafe character ([`is_unsafe`]) written as an
/// escape: `\x1b` for one below U+0100, `\u{202e}` above. Newlines and
/// tabs stay. Borrowed when nothing needed escaping.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push(&mut out, c);
    }
    Cow::Owned(out)
}

/// Bytes that should be UTF-8 text: [`visible`], with each byte that is
/// not part of valid UTF-8 written as `\xNN`.
pub fn visible_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            push(&mut out, c);
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// [`visible`] for text that must stay on one line (a label, a table
/// cell, a line of a summary): newlines, carriage returns and tabs are
/// escaped too.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) || c == '\n' || c == '\t') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => push(&mut out, c),
        }
    }
    Cow::Owned(out)
}

/// A Markdown table cell: [`md_text`] on one line, with `|` escaped (it
/// would end the cell).
pub fn md_cell(text: &str) -> String {
    md_text(&one_line(text)).replace('|', "\\|")
}

/// Markdown text: [`visible`], with every `<` that could open a tag (a
/// letter, `/`, `!` or `?` after it) written `&lt;`: Markdown passes raw
/// HTML through, and `</td><script>` would be markup in every renderer;
/// `p99<1ms` stays as it is.
pub fn md_text(text: &str) -> String {
    let text = visible(text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('<', Some(n)) if n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?') => {
                out.push_str("&lt;")
            }
            (c, _) => out.push(c),
        }
    }
    out
}

fn push(out: &mut String, c: char) {
    if !is_unsafe(c) {
        out.push(c);
    } else if (c as u32) < 0x100 {
        let _ = write!(out, "\\x{:02x}", c as u32);
    } else {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    }
}

/// A writer that shows what passes through it with [`visible_bytes`]: a
/// terminal behind it never gets a raw control character from a peer's
/// text, whatever printed it. Bytes are held until a newline (a UTF-8
/// character split across two writes stays whole) or `flush`.
pub struct Visible<W: std::io::Write> {
    inner: W,
    pending: Vec<u8>,
}

/// How many bytes [`Visible`] holds without a newline before it writes
/// them out anyway (a long line, or a progress display without newlines).
const HOLD: usize = 64 * 1024;

impl<W: std::io::Write> Visible<W> {
    pub fn new(inner: W) -> Visible<W> {
        Visible {
            inner,
            pending: Vec::new(),
        }
    }

    fn emit(&mut self, upto: usize) -> std::io::Result<()> {
        let shown = visible_bytes(&self.pending[..upto]);
        self.pending.drain(..upto);
        self.inner.write_all(shown.as_bytes())
    }
}

impl<W: std::io::Write> std::io::Write for Visible<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(last) = self.pending.iter().rposition(|&b| b == b'\n') {
            self.emit(last + 1)?;
        }
        if self.pending.len() > HOLD {
            // Cut at a character boundary: a partial UTF-8 sequence at the
            // end waits for the rest.
            let cut = match std::str::from_utf8(&self.pending) {
                Ok(_) => self.pending.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => self.pending.len(),
            };
            self.emit(cut)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let n = self.pending.len();
        self.emit(n)?;
        self.inner.flush()
    }
}

impl<W: std::io::Write> Drop for Visible<W> {
    fn drop(&mut self) {
        let _ = std::io::Write::flush(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// Every C0 and C1 control, DEL, and the bidi formatting characters are
    /// escaped; newline and tab stay; nothing else changes.
    #[test]
    fn issue_46_every_control_and_bidi_character_is_shown_escaped() {
        for c in (0u32..0x20).chain([0x7f]).chain(0x80..0xa0) {
            let ch = char::from_u32(c).unwrap();
            let shown = visible(&format!("a{ch}b")).into_owned();
            if ch == '\n' || ch == '\t' {
                assert_eq!(shown, format!("a{ch}b"));
            } else {
                assert_eq!(shown, format!("a\\x{c:02x}b"), "U+{c:04X}");
            }
            assert!(!one_line(&format!("a{ch}b")).chars().any(|x| x.is_control()));
        }
        for c in [
            0x61c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068,
            0x2069,
        ] {
            let ch = char::from_u32(c).unwrap();
            assert_eq!(visible(&format!("x{ch}y")), format!("x\\u{{{c:x}}}y"));
        }
        // Text a person may write stays as it is, borrowed.
        let plain = "p99 812us — naïve café 日本 🚀 | <b>";
        assert!(matches!(visible(plain), Cow::Borrowed(_)));
    }

    /// The sequences of issue 46's server: OSC (retitles a pane, ends in BEL
    /// or ST), CSI (clears the screen), DCS; none keeps a raw ESC.
    #[test]
    fn issue_46_escape_sequences_keep_no_raw_escape() {
        for seq in [
            "\u{1b}]0;pwned\u{7}",
            "\u{1b}]0;pwned\u{1b}\\",
            "\u{1b}[2J\u{1b}[H",
            "\u{1b}P1$r0m\u{1b}\\",
            "\u{9b}2J",
            "\u{9d}0;pwned\u{9c}",
        ] {
            let s = visible(seq);
            assert!(
                !s.contains('\u{1b}') && !s.chars().any(|c| c.is_control()),
                "{s}"
            );
            assert!(s.contains("\\x"), "{s}");
        }
        assert_eq!(visible("\u{1b}]0;pwned\u{7}"), "\\x1b]0;pwned\\x07");
    }

    /// Bytes that are not UTF-8 are shown as `\xNN`, the valid text
    /// around them kept.
    #[test]
    fn issue_46_invalid_utf8_is_shown_byte_by_byte() {
        assert_eq!(visible_bytes(b"ok\xff\xfe end"), "ok\\xff\\xfe end");
        assert_eq!(visible_bytes(b"caf\xc3\xa9"), "café");
        assert_eq!(visible_bytes(b"half \xe2\x82"), "half \\xe2\\x82");
        assert_eq!(visible_bytes(b"\x1b[2J"), "\\x1b[2J");
    }

    /// A table cell keeps to its cell and carries no markup.
    #[test]
    fn issue_46_a_markdown_cell_is_one_cell_of_text() {
        assert_eq!(
            md_cell("a|b\n</td><script>x&y"),
            "a\\|b\\n&lt;/td>&lt;script>x&y"
        );
        assert_eq!(md_cell("p99<1ms"), "p99<1ms");
        assert_eq!(md_text("<!-- x --><?php"), "&lt;!-- x -->&lt;?php");
        assert_eq!(one_line("two\nlines\there"), "two\\nlines\\there");
    }

    /// The writer escapes what passes through it, whole characters only,
    /// whatever the writes' boundaries.
    #[test]
    fn issue_46_the_visible_writer_escapes_across_write_boundaries() {
        let mut out = Vec::new();
        {
            let mut w = Visible::new(&mut out);
            let text = "é \u{1b}]0;t\u{7} ok\n日本\n";
            for b in text.as_bytes() {
                w.write_all(&[*b]).unwrap();
            }
            w.write_all(b"tail \xff").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "é \\x1b]0;t\\x07 ok\n日本\ntail \\xff"
        );
    }
}
