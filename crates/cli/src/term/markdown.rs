//! An answer's markdown as a terminal shows it, line by line as it
//! streams: headings bold, list items with a bullet and a hanging indent,
//! code blocks kept as written (dim), `code` and **bold** marked, quotes
//! with a bar, every other line wrapped at word boundaries to the
//! terminal's width. Only on a terminal: piped output is the text as the
//! model wrote it.

use crate::style::paint_if;

/// Turns streamed text into what the terminal shows, a whole line at a
/// time (a line is drawn once its end has come, or at the end) — and a
/// long line's wrapped rows as each is complete, while no marker in it
/// could still change how it is drawn.
pub struct Markdown {
    width: usize,
    colour: bool,
    /// The line under way.
    partial: String,
    /// Its rows drawn already (its wrapped rows before the last).
    drawn_rows: usize,
    /// Inside a ``` block.
    fenced: bool,
}

impl Markdown {
    /// A renderer for lines at most `width` columns wide.
    pub fn new(width: usize, colour: bool) -> Markdown {
        Markdown {
            width: width.max(20),
            colour,
            partial: String::new(),
            drawn_rows: 0,
            fenced: false,
        }
    }

    /// Takes `text`; answers what is ready to be drawn (whole lines, and
    /// a long line's complete rows).
    pub fn push(&mut self, text: &str) -> String {
        self.partial.push_str(text);
        let mut out = String::new();
        if let Some(end) = self.partial.rfind('\n') {
            let whole: String = self.partial.drain(..=end).collect();
            for line in whole.lines() {
                let drawn = std::mem::take(&mut self.drawn_rows);
                out.push_str(&rows_after(&self.line(line), drawn));
                out.push('\n');
            }
        }
        out.push_str(&self.complete_rows());
        out
    }

    /// What is left of the last line, drawn (no newline after it).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.partial);
        let drawn = std::mem::take(&mut self.drawn_rows);
        if rest.is_empty() {
            return rest;
        }
        rows_after(&self.line(&rest), drawn)
    }

    /// The line under way's wrapped rows that no later text can change
    /// (all but its last), not drawn yet — when it is prose or a list
    /// item or a quote with no marker in it so far.
    fn complete_rows(&mut self) -> String {
        let trimmed = self.partial.trim_start();
        let settled = !self.fenced
            && !trimmed.starts_with("```")
            && !trimmed.starts_with("~~~")
            && !trimmed.starts_with('#')
            && !trimmed.starts_with('|')
            && !self.partial.contains('`')
            && !self.partial.contains("**");
        if !settled || visible(&self.partial) <= self.width {
            return String::new();
        }
        let partial = self.partial.clone();
        let drawn = self.line(&partial);
        let rows: Vec<&str> = drawn.split('\n').collect();
        let complete = rows.len() - 1;
        if complete <= self.drawn_rows {
            return String::new();
        }
        let mut out = String::new();
        for row in &rows[self.drawn_rows..complete] {
            out.push_str(row);
            out.push('\n');
        }
        self.drawn_rows = complete;
        out
    }

    /// Whether part of a line waits for its end.
    pub fn pending(&self) -> bool {
        !self.partial.is_empty()
    }

    /// One whole line.
    fn line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            self.fenced = !self.fenced;
            return self.paint("2", line);
        }
        if self.fenced {
            return self.paint("2", line);
        }
        if let Some(heading) = heading(trimmed) {
            return self.paint("1", &self.inline(heading));
        }
        if let Some(quoted) = trimmed.strip_prefix("> ").or(trimmed.strip_prefix('>')) {
            let bar = self.paint("2", "│ ");
            return self.wrap(&self.inline(quoted), &bar, "  ");
        }
        let indent = line.len() - trimmed.len();
        if let Some((marker, item)) = list_item(trimmed) {
            let lead = format!("{}{marker} ", " ".repeat(indent));
            let hang = " ".repeat(lead.chars().count());
            return self.wrap(&self.inline(item), &lead, &hang);
        }
        if is_rule(trimmed) {
            return self.paint("2", &"─".repeat(self.width.min(40)));
        }
        let lead = " ".repeat(indent);
        self.wrap(&self.inline(trimmed), &lead, &lead)
    }

    /// `**bold**` and `` `code` `` marked (their markers gone).
    fn inline(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            let code = rest.find('`');
            let bold = rest.find("**");
            let (at, marker, sgr) = match (code, bold) {
                (Some(c), Some(b)) if b < c => (b, "**", "1"),
                (Some(c), _) => (c, "`", "36"),
                (None, Some(b)) => (b, "**", "1"),
                (None, None) => break,
            };
            let after = &rest[at + marker.len()..];
            let Some(close) = after.find(marker).filter(|n| *n > 0) else {
                out.push_str(&rest[..at + marker.len()]);
                rest = after;
                continue;
            };
            out.push_str(&rest[..at]);
            out.push_str(&self.paint(sgr, &after[..close]));
            rest = &after[close + marker.len()..];
        }
        out.push_str(rest);
        out
    }

    /// `text` wrapped at word boundaries: the first line after `lead`, the
    /// others after `hang`. Escape codes take no width.
    fn wrap(&self, text: &str, lead: &str, hang: &str) -> String {
        let mut out = String::from(lead);
        let mut column = visible(lead);
        let hang_width = visible(hang);
        let mut first_word = true;
        for word in text.split(' ').filter(|w| !w.is_empty()) {
            let width = visible(word);
            if !first_word && column + 1 + width > self.width {
                out.push('\n');
                out.push_str(hang);
                column = hang_width;
            } else if !first_word {
                out.push(' ');
                column += 1;
            }
            out.push_str(word);
            column += width;
            first_word = false;
        }
        out
    }

    fn paint(&self, code: &str, text: &str) -> String {
        paint_if(self.colour, code, text)
    }
}

/// `drawn`'s rows after its first `skip` (those drawn already).
fn rows_after(drawn: &str, skip: usize) -> String {
    if skip == 0 {
        return drawn.to_owned();
    }
    drawn.split('\n').skip(skip).collect::<Vec<_>>().join("\n")
}

/// A heading's text, without its `#`s.
fn heading(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) {
        return line[hashes..].strip_prefix(' ').map(str::trim);
    }
    None
}

/// A list item: its marker as shown (`•` for `-`, `*` and `+`; a number
/// as written) and its text.
fn list_item(line: &str) -> Option<(String, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = line.strip_prefix(bullet) {
            return Some(("•".to_owned(), item));
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 4 {
        let rest = &line[digits..];
        for end in [". ", ") "] {
            if let Some(item) = rest.strip_prefix(end) {
                return Some((line[..digits + 1].to_owned(), item));
            }
        }
    }
    None
}

/// `---`, `***` or `___` alone.
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    let first = t.chars().next();
    t.len() >= 3 && matches!(first, Some('-' | '*' | '_')) && t.chars().all(|x| Some(x) == first)
}

/// Columns `text` takes, escape codes left out.
fn visible(text: &str) -> usize {
    let mut width = 0;
    let mut escape = false;
    for c in text.chars() {
        match (escape, c) {
            (false, '\x1b') => escape = true,
            (true, 'm') => escape = false,
            (true, _) => {}
            (false, _) => width += 1,
        }
    }
    width
}

/// The terminal's width in columns (`COLUMNS` when the terminal does not
/// say; 100 when neither does).
pub fn terminal_width() -> usize {
    if let Ok(size) = rustix::termios::tcgetwinsize(std::io::stdout())
        && size.ws_col > 0
    {
        return usize::from(size.ws_col);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|c: &usize| *c > 0)
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, width: usize) -> String {
        let mut md = Markdown::new(width, false);
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out
    }

    #[test]
    fn a_long_line_wraps_at_word_boundaries() {
        let out = render("the quick brown fox jumps over the lazy dog again\n", 20);
        for line in out.lines() {
            assert!(line.chars().count() <= 20, "{line:?}");
        }
        assert_eq!(
            out.replace('\n', " ").trim(),
            "the quick brown fox jumps over the lazy dog again"
        );
    }

    #[test]
    fn headings_lists_bold_and_code_lose_their_markers() {
        let out = render(
            "## Title\n- one **two** `three`\n1. first\n```\n  **raw**\n```\n",
            40,
        );
        assert_eq!(
            out,
            "Title\n• one two three\n1. first\n```\n  **raw**\n```\n"
        );
    }

    #[test]
    fn a_list_item_hangs_under_its_text() {
        let out = render("- alpha beta gamma delta epsilon zeta\n", 22);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out:?}");
        assert!(lines[0].starts_with("• "));
        assert!(
            lines[1].starts_with("  ") && !lines[1].starts_with("   "),
            "{out:?}"
        );
    }

    #[test]
    fn text_streamed_in_pieces_is_drawn_a_line_at_a_time() {
        let mut md = Markdown::new(80, false);
        assert_eq!(md.push("# He"), "");
        assert!(md.pending());
        assert_eq!(md.push("llo\nwor"), "Hello\n");
        assert_eq!(md.finish(), "wor");
        assert!(!md.pending());
    }

    #[test]
    fn a_long_line_streams_its_rows_as_each_is_complete() {
        let text = "the quick brown fox jumps over the lazy dog and runs far away\n";
        let mut md = Markdown::new(20, false);
        let mut out = String::new();
        let mut shown_early = false;
        for piece in text.as_bytes().chunks(5) {
            let drawn = md.push(std::str::from_utf8(piece).unwrap());
            shown_early |= !drawn.is_empty() && !out.contains('\n') && md.pending();
            out.push_str(&drawn);
        }
        out.push_str(&md.finish());
        assert!(shown_early, "rows came before the line's end");
        assert_eq!(out, render(text, 20), "drawn as the whole line would be");
        // a marker holds the line to its end: it may change what came before
        let mut md = Markdown::new(20, false);
        assert_eq!(md.push("a `b` and then a much longer tail"), "");
    }

    #[test]
    fn an_unclosed_marker_stays_as_written() {
        assert_eq!(render("2 ** 3 and `x\n", 80), "2 ** 3 and `x\n");
    }

    #[test]
    fn colour_codes_take_no_width() {
        let mut md = Markdown::new(20, true);
        let out = md.push("**aaaa** bbbb cccc dddd eeee\n");
        assert_eq!(out.lines().count(), 2, "{out:?}");
    }
}
