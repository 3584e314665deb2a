//! What a run read from outside the project, kept as the windows of its
//! text that a URL or a command carrying it out would repeat: a key read
//! from `~/.ssh` and then put in a fetched address is seen, and that call
//! is asked about whatever the rules allow.
//!
//! A window is 16 characters of a run of token characters (letters,
//! digits, `+/=_-`) holding at least one digit — what keys, tokens and
//! hashes are made of, and what words of prose rarely are. Text is
//! compared as written and with its `%XX` escapes decoded.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Characters a window spans.
const WINDOW: usize = 16;
/// Of each text read outside, at most this many bytes are kept in mind.
const MAX_TEXT: usize = 256 * 1024;
/// At most this many windows are kept (8 MiB of hashes).
const MAX_WINDOWS: usize = 1 << 20;

/// The windows of everything read outside the project so far.
#[derive(Clone, Debug, Default)]
pub struct Taint {
    windows: HashSet<u64>,
}

impl Taint {
    /// Keeps `text` (a result read from outside the project) in mind.
    pub fn note(&mut self, text: &str) {
        let end = floor_char_boundary(text, MAX_TEXT);
        for window in windows(&text[..end]) {
            if self.windows.len() >= MAX_WINDOWS {
                return;
            }
            self.windows.insert(window);
        }
    }

    /// Whether `text` (an address, a command, a tool's input) repeats a
    /// window of something read outside the project.
    pub fn carried_by(&self, text: &str) -> bool {
        if self.windows.is_empty() {
            return false;
        }
        let decoded = percent_decoded(text);
        windows(text)
            .chain(windows(&decoded))
            .any(|w| self.windows.contains(&w))
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0)
}

fn token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// The hashes of every window with a digit in the token runs of `text`.
fn windows(text: &str) -> impl Iterator<Item = u64> + '_ {
    text.as_bytes()
        .split(|b| !token(*b))
        .filter(|run| run.len() >= WINDOW)
        .flat_map(|run| run.windows(WINDOW))
        .filter(|w| w.iter().any(u8::is_ascii_digit))
        .map(|w| {
            let mut h = DefaultHasher::new();
            w.hash(&mut h);
            h.finish()
        })
}

/// `%XX` escapes decoded (others left as they are).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\n\
        b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
        QyNTUxOQAAACBd5S0xYyZ9n2gk1f3c2dT5mVb7Jt0kqJXw6mN9Y8u7rQAAAJi1cQ4ItXEO\n\
        -----END OPENSSH PRIVATE KEY-----\n";

    #[test]
    fn a_key_read_outside_is_seen_in_an_address_however_escaped() {
        let mut taint = Taint::default();
        taint.note(KEY);
        let piece = "QyNTUxOQAAACBd5S0xYyZ9n2gk1f3c2dT5";
        assert!(taint.carried_by(&format!("http://evil.test/?k={piece}")));
        let escaped: String = piece.bytes().map(|b| format!("%{b:02X}")).collect();
        assert!(taint.carried_by(&format!("http://evil.test/?k={escaped}")));
        assert!(!taint.carried_by("https://docs.rs/serde/1.0.200/serde/"));
        assert!(!taint.carried_by("curl http://example.com/configuration-management"));
    }

    #[test]
    fn nothing_read_outside_taints_nothing() {
        let taint = Taint::default();
        assert!(!taint.carried_by("http://x/?k=QyNTUxOQAAACBd5S0xYyZ9n2gk1f3c2dT5"));
    }

    #[test]
    fn a_huge_text_is_kept_bounded() {
        let mut taint = Taint::default();
        let text: String = (0..200_000).map(|i| format!("{i:020}\n")).collect();
        taint.note(&text);
        assert!(taint.windows.len() <= MAX_WINDOWS);
        let cut = "é".repeat(MAX_TEXT);
        taint.note(&cut); // cut at a character boundary, no panic
    }
}
