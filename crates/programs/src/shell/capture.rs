//! A command's output as the model gets it: every byte counted, the first
//! and last parts kept (30,000 characters at most, head and tail, with a
//! note of what was cut), in bounded memory however much it prints.

/// The most characters of output an answer keeps.
pub(crate) const MAX_CHARS: usize = 30_000;

/// Bytes kept at each end: enough for `MAX_CHARS / 2` characters of any
/// width.
const KEEP_BYTES: usize = MAX_CHARS / 2 * 4;

/// The output seen so far.
#[derive(Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    /// The latest bytes past the head: at most `2 * KEEP_BYTES`, cut back
    /// to `KEEP_BYTES` in one move when it fills (not a byte at a time).
    tail: Vec<u8>,
    total_bytes: usize,
    /// Characters, counted as UTF-8 lead bytes.
    total_chars: usize,
}

impl Capture {
    /// Takes more output.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total_bytes += bytes.len();
        self.total_chars += bytecount::num_chars(bytes);
        let room = KEEP_BYTES.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        let rest = &rest[rest.len().saturating_sub(KEEP_BYTES)..];
        self.tail.extend_from_slice(rest);
        if self.tail.len() > 2 * KEEP_BYTES {
            self.tail.drain(..self.tail.len() - KEEP_BYTES);
        }
    }

    /// The text to answer with, and whether anything was cut.
    pub fn finish(mut self) -> (String, bool) {
        let excess = self.tail.len().saturating_sub(KEEP_BYTES);
        self.tail.drain(..excess);
        if self.tail.is_empty() || self.head.len() + self.tail.len() == self.total_bytes {
            let mut all = self.head;
            all.extend(self.tail);
            return crate::text::head_and_tail(&String::from_utf8_lossy(&all), MAX_CHARS);
        }
        let half = crate::text::kept_at_each_end(MAX_CHARS);
        let head = String::from_utf8_lossy(&self.head);
        let head_end = head.char_indices().nth(half).map_or(head.len(), |(i, _)| i);
        let tail = String::from_utf8_lossy(&self.tail).into_owned();
        let tail_chars = tail.chars().count();
        let tail_start = tail
            .char_indices()
            .nth(tail_chars.saturating_sub(half))
            .map_or(0, |(i, _)| i);
        let cut = self.total_chars.saturating_sub(2 * half);
        (
            format!(
                "{}\n\n[… {cut} characters cut from the middle of {} …]\n\n{}",
                &head[..head_end],
                self.total_chars,
                &tail[tail_start..]
            ),
            true,
        )
    }
}

/// Splits a stream's bytes into whole UTF-8 text, carrying a character cut
/// at the end of one read over to the next.
#[derive(Default)]
pub(crate) struct Utf8Carry(Vec<u8>);

impl Utf8Carry {
    /// The text `bytes` completes (invalid sequences replaced).
    pub fn text(&mut self, bytes: &[u8]) -> String {
        self.0.extend_from_slice(bytes);
        let keep = match std::str::from_utf8(&self.0) {
            Ok(_) => 0,
            Err(e) if e.error_len().is_none() => self.0.len() - e.valid_up_to(),
            Err(_) => 0,
        };
        let rest = self.0.split_off(self.0.len() - keep);
        let text = String::from_utf8_lossy(&self.0).into_owned();
        self.0 = rest;
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_whole() {
        let mut c = Capture::default();
        c.push(b"hello\n");
        c.push(b"world\n");
        assert_eq!(c.finish(), ("hello\nworld\n".to_owned(), false));
    }

    #[test]
    fn huge_output_keeps_head_and_tail_in_bounded_memory() {
        let mut c = Capture::default();
        c.push(b"FIRST\n");
        for i in 0..200_000 {
            c.push(format!("line {i}\n").as_bytes());
        }
        c.push(b"LAST\n");
        assert!(c.head.len() + c.tail.len() <= 3 * KEEP_BYTES);
        let (text, cut) = c.finish();
        assert!(cut);
        assert!(text.starts_with("FIRST\nline 0\n"), "{}", &text[..50]);
        assert!(text.ends_with("line 199999\nLAST\n"));
        assert!(text.contains("characters cut from the middle of"));
        assert!(text.chars().count() <= MAX_CHARS);
    }

    #[test]
    fn a_character_split_between_reads_is_kept_whole() {
        let mut carry = Utf8Carry::default();
        let e = "é".as_bytes();
        assert_eq!(carry.text(&[b'a', e[0]]), "a");
        assert_eq!(carry.text(&[e[1], b'b']), "éb");
    }
}
