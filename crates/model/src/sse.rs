//! Server-sent events, decoded as the WHATWG spec says: lines end with
//! CRLF, LF or CR; a leading BOM is skipped; `:` starts a comment; a field
//! is `name: value` (one leading space dropped) or a bare `name`; `data`
//! lines join with `\n`; a blank line dispatches the event, unless it has no
//! data; `id` and `retry` are not needed here and ignored; an unfinished
//! event at the end of the body is dropped.
//!
//! Zero-copy where it counts: bytes are scanned in place and the event's
//! buffers are reused, because a stream is thousands of small events.

/// One event: its `event:` name, if any, and its data.
#[derive(Debug, PartialEq)]
pub(crate) struct SseEvent<'a> {
    pub event: Option<&'a str>,
    pub data: &'a str,
}

/// Bytes that are not UTF-8.
#[derive(Debug)]
pub(crate) struct NotUtf8;

/// The decoder: feed it bytes, take events.
#[derive(Default)]
pub(crate) struct SseDecoder {
    /// Decoded text not yet consumed; `at` is where the next line starts.
    text: String,
    at: usize,
    /// The end of a UTF-8 character split across two pieces of the body.
    partial: Vec<u8>,
    event: String,
    has_event: bool,
    /// The data of a multi-line event (a one-line event's data is borrowed
    /// from `text` instead).
    data: String,
    /// Where the single data line is, while there is only one.
    one_line: Option<(usize, usize)>,
    has_data: bool,
    /// A CR ended the last line; a LF right after it belongs to it.
    after_cr: bool,
    started: bool,
    /// The last call returned an event whose buffers must now be cleared.
    dispatched: bool,
}

impl SseDecoder {
    /// Appends bytes from the body.
    ///
    /// # Errors
    /// Bytes that are not UTF-8.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), NotUtf8> {
        if self.dispatched {
            self.clear_event();
        }
        // Consumed text is about to go: keep an unfinished event's data.
        if let Some((start, end)) = self.one_line.take() {
            let line = &self.text[start..end];
            self.data.push_str(line);
            self.data.push('\n');
        }
        if self.at == self.text.len() {
            self.text.clear();
        } else if self.at > 0 {
            self.text.drain(..self.at);
        }
        self.at = 0;
        let owned;
        let bytes = if self.partial.is_empty() {
            bytes
        } else {
            self.partial.extend_from_slice(bytes);
            owned = std::mem::take(&mut self.partial);
            &owned[..]
        };
        let valid = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) if e.error_len().is_none() => {
                let (head, tail) = bytes.split_at(e.valid_up_to());
                self.partial.extend_from_slice(tail);
                std::str::from_utf8(head).map_err(|_| NotUtf8)?
            }
            Err(_) => return Err(NotUtf8),
        };
        self.text.push_str(valid);
        Ok(())
    }

    /// The next complete event in what was fed, if any.
    pub fn next_event(&mut self) -> Option<SseEvent<'_>> {
        if self.dispatched {
            self.clear_event();
        }
        while let Some((start, end)) = self.next_line() {
            if start == end {
                if self.has_data {
                    self.dispatched = true;
                    return Some(self.current());
                }
                self.clear_event();
                continue;
            }
            self.field(start, end);
        }
        None
    }

    fn clear_event(&mut self) {
        self.dispatched = false;
        self.event.clear();
        self.has_event = false;
        self.data.clear();
        self.one_line = None;
        self.has_data = false;
    }

    fn current(&self) -> SseEvent<'_> {
        let data = match self.one_line {
            Some((start, end)) => &self.text[start..end],
            None => self.data.strip_suffix('\n').unwrap_or(&self.data),
        };
        SseEvent {
            event: self.has_event.then_some(self.event.as_str()),
            data,
        }
    }

    /// The bounds of the next complete line, its ending consumed.
    fn next_line(&mut self) -> Option<(usize, usize)> {
        if !self.started {
            if self.text.is_empty() {
                return None;
            }
            self.started = true;
            if self.text.starts_with('\u{FEFF}') {
                self.at = '\u{FEFF}'.len_utf8();
            }
        }
        let bytes = self.text.as_bytes();
        if self.after_cr && self.at < bytes.len() {
            self.after_cr = false;
            if bytes[self.at] == b'\n' {
                self.at += 1;
            }
        }
        let end = memchr::memchr2(b'\n', b'\r', &bytes[self.at..])?;
        let start = self.at;
        self.at += end + 1;
        self.after_cr = bytes[start + end] == b'\r';
        Some((start, start + end))
    }

    /// Applies one `name: value` line.
    fn field(&mut self, start: usize, end: usize) {
        let line = &self.text[start..end];
        if line.starts_with(':') {
            return;
        }
        // Most lines are data: name them without a search.
        let colon = if line.starts_with("data:") {
            Some(4)
        } else {
            memchr::memchr(b':', line.as_bytes())
        };
        let (name, value_start) = match colon {
            Some(colon) => {
                let skip = usize::from(line[colon + 1..].starts_with(' '));
                (&line[..colon], start + colon + 1 + skip)
            }
            None => (line, end),
        };
        match name {
            "data" => {
                if self.has_data {
                    if let Some((s, e)) = self.one_line.take() {
                        let first = &self.text[s..e];
                        self.data.push_str(first);
                        self.data.push('\n');
                    }
                    self.data.push_str(&self.text[value_start..end]);
                    self.data.push('\n');
                } else {
                    self.one_line = Some((value_start, end));
                }
                self.has_data = true;
            }
            "event" => {
                self.event.clear();
                self.event.push_str(&self.text[value_start..end]);
                self.has_event = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    /// Every event in `bytes` fed in the given pieces, as owned pairs.
    fn decode(pieces: &[&[u8]]) -> Vec<(Option<String>, String)> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        for piece in pieces {
            d.feed(piece).unwrap();
            while let Some(e) = d.next_event() {
                out.push((e.event.map(str::to_owned), e.data.to_owned()));
            }
        }
        out
    }

    fn ev(event: Option<&str>, data: &str) -> (Option<String>, String) {
        (event.map(str::to_owned), data.to_owned())
    }

    #[test]
    fn the_spec_examples() {
        let text = b"data: YHOO\ndata: +2\ndata: 10\n\n: test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n";
        assert_eq!(
            decode(&[text]),
            [
                ev(None, "YHOO\n+2\n10"),
                ev(None, "first event"),
                ev(None, "second event"),
                ev(None, " third event"),
            ]
        );
        let text = b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\ndata\n\ndata\ndata\n\ndata:";
        assert_eq!(
            decode(&[text]),
            [
                ev(Some("add"), "73857293"),
                ev(Some("remove"), "2153"),
                ev(None, ""),
                ev(None, "\n"),
            ],
            "an unfinished event at the end is dropped"
        );
    }

    #[test]
    fn line_endings_bom_and_events_without_data() {
        let text = b"\xEF\xBB\xBFevent: ping\r\n\r\nevent: a\rdata: 1\r\rdata: 2\r\n\r\n";
        assert_eq!(decode(&[text]), [ev(Some("a"), "1"), ev(None, "2")]);
        // CR and LF split across pieces, BOM split too.
        let pieces: [&[u8]; 5] = [
            b"\xEF\xBB",
            b"\xBFdata: x\r",
            b"\n",
            b"\r",
            b"\ndata: y\n\n",
        ];
        assert_eq!(decode(&pieces), [ev(None, "x"), ev(None, "y")]);
    }

    #[test]
    fn an_event_may_span_pieces_line_by_line() {
        let pieces: [&[u8]; 4] = [b"event: x\ndata: a\n", b"data: b\n", b"data: c", b"\n\n"];
        assert_eq!(decode(&pieces), [ev(Some("x"), "a\nb\nc")]);
        let pieces: [&[u8]; 2] = [b"data: one\n", b"\ndata: two\n\n"];
        assert_eq!(decode(&pieces), [ev(None, "one"), ev(None, "two")]);
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut d = SseDecoder::default();
        assert!(d.feed(b"data: \xFF\xFE\n\n").is_err());
        // A character split across two pieces is fine.
        let mut d = SseDecoder::default();
        d.feed(b"data: \xC3").unwrap();
        d.feed(b"\xA9\n\n").unwrap();
        assert_eq!(d.next_event().unwrap().data, "é");
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(
            events in prop::collection::vec(("[a-z_]{0,6}", "[ -~é🦀]{0,30}"), 1..6),
            ending in prop::sample::select(vec!["\n", "\r\n", "\r"]),
            cuts in prop::collection::vec(0usize..400, 0..8),
        ) {
            let mut text = String::new();
            for (name, data) in &events {
                if !name.is_empty() {
                    text.push_str(&format!("event: {name}{ending}"));
                }
                text.push_str(&format!(":comment{ending}data: {data}{ending}{ending}"));
            }
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut last = 0;
            for c in cuts {
                pieces.push(&bytes[last..c]);
                last = c;
            }
            pieces.push(&bytes[last..]);
            let expected: Vec<_> = events
                .iter()
                .map(|(n, d)| ((!n.is_empty()).then(|| n.clone()), d.clone()))
                .collect();
            prop_assert_eq!(decode(&pieces), expected);
        }
    }
}
