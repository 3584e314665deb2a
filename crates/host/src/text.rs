//! Text as a host shows it: cut to a line, written out where a terminal
//! would act on it, ids shortened to what tells them apart.

/// The first line of `text`, at most `max` characters, with `…` when cut,
/// [`shown`] as a terminal may show it.
pub fn cut(text: &str, max: usize) -> String {
    let first = first_line(text);
    let taken: String = first.chars().take(max).collect();
    let mut out = shown(&taken).into_owned();
    if first.chars().count() > max || text.trim().lines().count() > 1 {
        out.push('…');
    }
    out
}

/// `text` as a terminal may show it: control characters (escape
/// sequences, carriage returns, bells…) and bidirectional overrides are
/// written out (`\x1b`, `\u{202e}`) instead of acted on — what a model, a
/// prompt or a tool wrote cannot retitle the window, clear the screen,
/// hide a link or reorder a command. Newlines and tabs are kept.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c as u32 {
            _ if !hidden(c) => out.push(c),
            n @ 0..=0x7f => out.push_str(&format!("\\x{n:02x}")),
            n => out.push_str(&format!("\\u{{{n:x}}}")),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether a terminal would act on `c` rather than show it.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The first line of `text` that is not blank, trimmed.
pub fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// The shortest prefix of each id (at least `min` characters) that no
/// other id in `ids` shares.
pub fn short_ids(ids: &[String], min: usize) -> Vec<String> {
    let mut sorted: Vec<&String> = ids.iter().collect();
    sorted.sort();
    let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    ids.iter()
        .map(|id| {
            let at = sorted.binary_search(&id).unwrap_or(0);
            let before = at.checked_sub(1).map_or(0, |i| common(sorted[i], id));
            let after = sorted.get(at + 1).map_or(0, |next| common(next, id));
            let len = (before.max(after) + 1).max(min).min(id.len());
            id[..len].to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_are_unique_prefixes() {
        let ids: Vec<String> = ["s_01AAAA1", "s_01AAAB2", "s_01ZZZZ3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(short_ids(&ids, 4), ["s_01AAAA", "s_01AAAB", "s_01Z"]);
        assert_eq!(cut("one\ntwo", 10), "one…");
        assert_eq!(cut("short", 10), "short");
    }

    #[test]
    fn what_a_terminal_would_act_on_is_shown_written_out() {
        assert_eq!(shown("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            shown("\x1b]0;owned\x07\x1b[2J\r\u{9b}\u{202e}"),
            "\\x1b]0;owned\\x07\\x1b[2J\\x0d\\u{9b}\\u{202e}"
        );
        assert_eq!(cut("\x1b[31mred", 20), "\\x1b[31mred");
    }
}
