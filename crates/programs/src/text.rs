//! Text as the tools hand it to a model: numbered lines (`cat -n`), long
//! lines cut with a mark, long outputs kept head and tail; and the facts
//! they record (SHA-256, RFC 3339 times).

use std::fmt::Write as _;

/// A line longer than this many characters is cut.
pub(crate) const MAX_LINE_CHARS: usize = 2_000;

/// `line` cut to [`MAX_LINE_CHARS`] characters, with a mark saying how
/// much was left out.
pub(crate) fn cut_line(line: &str) -> std::borrow::Cow<'_, str> {
    if line.len() <= MAX_LINE_CHARS {
        return line.into();
    }
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line.into(),
        Some((at, _)) => {
            let rest = line[at..].chars().count();
            format!("{}… [line cut: {rest} more characters]", &line[..at]).into()
        }
    }
}

/// Appends `line` as `cat -n` shows it: the number right-aligned in six
/// columns, a tab, the (cut) line.
pub(crate) fn push_numbered(out: &mut String, number: usize, line: &str) {
    let _ = writeln!(out, "{number:>6}\t{}", cut_line(line));
}

/// Characters a cut text keeps free under its cap for the note that says
/// what was cut.
pub(crate) const NOTE_ROOM: usize = 100;

/// The characters kept at each end of a text cut to `max` (its note
/// included).
pub(crate) fn kept_at_each_end(max: usize) -> usize {
    max.saturating_sub(NOTE_ROOM) / 2
}

/// `text` kept to `max` characters: the first and last parts, with a note
/// in between of how many characters were cut (the note within `max`).
/// Returns the text and whether anything was cut.
pub(crate) fn head_and_tail(text: &str, max: usize) -> (String, bool) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_owned(), false);
    }
    let half = kept_at_each_end(max);
    let head_end = text.char_indices().nth(half).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - half)
        .map_or(text.len(), |(i, _)| i);
    let cut = total - 2 * half;
    (
        format!(
            "{}\n\n[… {cut} characters cut from the middle of {total} …]\n\n{}",
            &text[..head_end],
            &text[tail_start..]
        ),
        true,
    )
}

/// The SHA-256 of `bytes`, lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

/// Bytes as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A time as RFC 3339 UTC with milliseconds.
pub(crate) fn rfc3339(time: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// A unified diff of `old` → `new` for `path`, at most `max` characters.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str) -> String {
    const MAX: usize = 100_000;
    let diff = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    head_and_tail(&diff, MAX).0
}

/// How many lines `text` has (a last line without a newline counts).
pub(crate) fn count_lines(bytes: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    newlines + usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let line = "é".repeat(MAX_LINE_CHARS + 5);
        let cut = cut_line(&line);
        assert!(cut.ends_with("[line cut: 5 more characters]"), "{cut}");
        assert_eq!(cut_line("short"), "short");
    }

    #[test]
    fn head_and_tail_keep_both_ends() {
        let text: String = (0..300).map(|i| format!("{i:03}")).collect();
        let (kept, cut) = head_and_tail(&text, 230);
        assert!(cut);
        assert!(kept.chars().count() <= 230, "the note within the cap");
        assert!(kept.starts_with("000001002003004"), "{kept}");
        assert!(kept.ends_with("295296297298299"), "{kept}");
        assert!(kept.contains("770 characters cut from the middle of 900"));
        assert_eq!(head_and_tail("abc", 30), ("abc".to_owned(), false));
    }

    #[test]
    fn sha256_is_the_standard_one() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(count_lines(b"a\nb\n"), 2);
        assert_eq!(count_lines(b""), 0);
    }
}
