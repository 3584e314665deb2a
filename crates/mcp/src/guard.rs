//! What a stdio server says, bounded: its stdout read through a small JSON
//! lexer ([`LineGuard`]) that cuts every string over [`STRING_BYTES`] to
//! its two ends (a note between them, inside the string, so the line stays
//! JSON), and ends a line still over [`MESSAGE_BYTES`] after that,
//! answering the request it answered with an error that says so. Memory
//! is bounded by what is kept, never by the line: an answer of any size is
//! cut, never dropped (the SDK drops a line over its limit, and the call
//! would wait for its timeout).

use serde_json::{Value, json};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};

/// The most bytes of one JSON string passed on whole: an image a model
/// takes (5 MiB once encoded) passes.
pub(crate) const STRING_BYTES: usize = 6 * 1024 * 1024;

/// The bytes kept of each end of a string that is cut: the two, with the
/// note, fit in [`MAX_OUTPUT_CHARS`](crate::output::MAX_OUTPUT_CHARS).
pub(crate) const KEEP_BYTES: usize = 48 * 1024;

/// The most bytes of one message once its strings are cut (over stdio and
/// streamable HTTP alike).
pub(crate) const MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// The longest piece of a string that is never split: a surrogate pair
/// written as two `\uXXXX` escapes.
const UNIT_MAX: usize = 12;

/// How many bytes are read from the server at a time.
const CHUNK: usize = 64 * 1024;

/// The limits a [`Cutter`] keeps to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// A string longer than this is cut.
    pub string: usize,
    /// What is kept of each end of a cut string.
    pub keep: usize,
    /// A line longer than this (once cut) is ended.
    pub line: usize,
}

impl Limits {
    /// The limits a server's answers are held to.
    pub(crate) const SERVER: Limits = Limits {
        string: STRING_BYTES,
        keep: KEEP_BYTES,
        line: MESSAGE_BYTES,
    };
}

/// An [`AsyncRead`] over a server's stdout that passes on its lines with
/// each long string cut (see the module's doc).
pub(crate) struct LineGuard<R> {
    inner: R,
    cutter: Cutter,
    /// How much of `cutter.out` has been read.
    given: usize,
    chunk: Box<[u8]>,
    eof: bool,
}

impl<R> LineGuard<R> {
    /// Guards `inner` with the server limits.
    pub(crate) fn new(inner: R) -> LineGuard<R> {
        LineGuard::with_limits(inner, Limits::SERVER)
    }

    /// Guards `inner` with `limits`.
    pub(crate) fn with_limits(inner: R, limits: Limits) -> LineGuard<R> {
        LineGuard {
            inner,
            cutter: Cutter::new(limits),
            given: 0,
            chunk: vec![0; CHUNK].into_boxed_slice(),
            eof: false,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            let ready = &this.cutter.out[this.given..];
            if !ready.is_empty() {
                let n = ready.len().min(buf.remaining());
                buf.put_slice(&ready[..n]);
                this.given += n;
                if this.given == this.cutter.out.len() {
                    this.cutter.out.clear();
                    this.cutter.out.shrink_to(CHUNK);
                    this.given = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof || this.cutter.ended {
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
            } else {
                this.cutter.feed(read.filled());
            }
        }
    }
}

/// The lexer: bytes in, bytes out (in `out`), one line at a time.
pub(crate) struct Cutter {
    limits: Limits,
    /// What is ready to be read.
    pub out: Vec<u8>,
    /// The stream is over: a line over the limit had nothing to answer.
    pub ended: bool,
    /// Bytes of this line given out.
    line_out: usize,
    /// This line went over the limit: the rest of it is dropped.
    over: bool,
    /// The error for this line has been given.
    answered: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The string's content not given out yet: all of it, or, once cut,
    /// its tail.
    held: Vec<u8>,
    /// Bytes of the string left out, once it is cut.
    cut: Option<usize>,
    top: Top,
}

/// What is known of the line's top-level object.
#[derive(Default)]
struct Top {
    object: bool,
    /// The next string at depth 1 is a key.
    expect_key: bool,
    /// The key being read (its first bytes).
    key: Option<Vec<u8>>,
    /// The last key read.
    last: Vec<u8>,
    /// The raw text of the `id` value being read.
    reading_id: Option<Vec<u8>>,
    id: Option<Value>,
    /// A `method`: a request or notification, nothing to answer.
    method: bool,
    /// A `result` or `error`: an answer.
    answer: bool,
}

impl Top {
    /// A key's content, or an id's text.
    fn capture(&mut self, bytes: &[u8]) {
        if let Some(key) = &mut self.key {
            let room = 16usize.saturating_sub(key.len());
            key.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
        self.capture_id(bytes);
    }

    fn capture_id(&mut self, bytes: &[u8]) {
        if let Some(raw) = &mut self.reading_id {
            raw.extend_from_slice(bytes);
            if raw.len() > 256 {
                self.reading_id = None; // not an id anyone sends
            }
        }
    }

    fn key_ended(&mut self) {
        if let Some(key) = self.key.take() {
            match key.as_slice() {
                b"method" => self.method = true,
                b"result" | b"error" => self.answer = true,
                _ => {}
            }
            self.last = key;
        }
    }

    fn id_ended(&mut self) {
        if let Some(raw) = self.reading_id.take() {
            self.id = serde_json::from_slice::<Value>(raw.trim_ascii())
                .ok()
                .filter(|id| id.is_number() || id.is_string());
        }
    }
}

impl Cutter {
    /// A cutter at the start of a line.
    pub(crate) fn new(limits: Limits) -> Cutter {
        Cutter {
            limits,
            out: Vec::new(),
            ended: false,
            line_out: 0,
            over: false,
            answered: false,
            depth: 0,
            in_string: false,
            escaped: false,
            held: Vec::new(),
            cut: None,
            top: Top::default(),
        }
    }

    /// Takes in `input`, however it is split.
    pub(crate) fn feed(&mut self, mut input: &[u8]) {
        while !input.is_empty() && !self.ended {
            let plain = if self.in_string && !self.escaped {
                input
                    .iter()
                    .position(|b| matches!(b, b'"' | b'\\' | b'\n'))
                    .unwrap_or(input.len())
            } else {
                0
            };
            if plain > 0 {
                let (run, rest) = input.split_at(plain);
                self.top.capture(run);
                self.content(run);
                input = rest;
            } else {
                self.byte(input[0]);
                input = &input[1..];
            }
        }
    }

    fn byte(&mut self, b: u8) {
        if b == b'\n' {
            return self.end_line();
        }
        if self.in_string {
            if !self.escaped && b == b'"' {
                self.top.capture_id(&[b]);
                self.end_string();
            } else {
                self.escaped = !self.escaped && b == b'\\';
                self.top.capture(&[b]);
                self.content(&[b]);
            }
            return;
        }
        if self.depth == 1 && self.top.reading_id.is_some() && matches!(b, b',' | b'}') {
            self.top.id_ended();
        } else {
            self.top.capture_id(&[b]);
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.top.object && self.top.expect_key {
                    self.top.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 && b == b'{' {
                    self.top.object = true;
                    self.top.expect_key = true;
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 => {
                self.top.expect_key = false;
                if self.top.last == b"id" {
                    self.top.reading_id = Some(Vec::new());
                }
            }
            b',' if self.depth == 1 => self.top.expect_key = self.top.object,
            _ => {}
        }
        self.emit(&[b]);
        if self.over
            && !self.answered
            && !self.top.method
            && self.top.answer
            && let Some(id) = self.top.id.take()
        {
            self.answer_too_large(id);
        }
    }

    /// Bytes of a string's content.
    fn content(&mut self, bytes: &[u8]) {
        if self.over {
            return;
        }
        self.held.extend_from_slice(bytes);
        match self.cut {
            None if self.held.len() > self.limits.string => self.start_cut(),
            Some(_) if self.held.len() >= 2 * self.limits.keep + UNIT_MAX => self.trim(),
            _ => {}
        }
    }

    /// The string is too long: its head goes out, and from now on only
    /// its tail is kept.
    fn start_cut(&mut self) {
        let held = std::mem::take(&mut self.held);
        let head = boundary(&held, 0, self.limits.keep);
        self.emit(&held[..head]);
        if self.over {
            return;
        }
        self.held = held;
        self.held.drain(..head);
        self.cut = Some(0);
        self.trim();
    }

    /// Leaves out the front of a cut string's tail, so at most
    /// `keep` bytes (and a whole piece) stay.
    fn trim(&mut self) {
        if self.held.len() <= self.limits.keep {
            return;
        }
        let to = boundary(&self.held, 0, self.held.len() - self.limits.keep);
        self.held.drain(..to);
        if let Some(cut) = &mut self.cut {
            *cut += to;
        }
    }

    fn end_string(&mut self) {
        self.in_string = false;
        self.top.key_ended();
        self.flush_string();
        self.emit(b"\"");
    }

    /// What is held of the string goes out: after a note, when it was cut.
    fn flush_string(&mut self) {
        if self.cut.is_some() {
            self.trim();
            let cut = self.cut.take().unwrap_or_default();
            let note = format!(
                "\\n[\u{2026} {cut} bytes of this string cut by hermitcrab (a string over {} \
                 bytes keeps its two ends) \u{2026}]\\n",
                self.limits.string
            );
            self.emit(note.as_bytes());
        }
        let held = std::mem::take(&mut self.held);
        self.emit(&held);
        self.held = held;
        self.held.clear();
    }

    /// Gives out bytes of the line, unless it is over the limit.
    fn emit(&mut self, bytes: &[u8]) {
        if self.over {
            return;
        }
        if self.line_out + bytes.len() > self.limits.line {
            // The line so far ends here: not JSON, so the SDK skips it.
            self.over = true;
            self.out.push(b'\n');
            self.held.clear();
            self.cut = None;
            return;
        }
        self.out.extend_from_slice(bytes);
        self.line_out += bytes.len();
    }

    fn end_line(&mut self) {
        if self.in_string && !self.over {
            self.flush_string(); // a broken line, passed on as it is
        }
        if !self.over {
            self.out.push(b'\n');
        } else if !self.answered {
            if self.top.method {
                eprintln!(
                    "hermitcrab: the server sent a request or notification of over {} bytes; \
                     it was left out",
                    self.limits.line
                );
            } else if let Some(id) = self.top.id.take() {
                self.answer_too_large(id);
            } else {
                eprintln!(
                    "hermitcrab: the server sent a message of over {} bytes with no id to \
                     answer; the connection is ended, so the calls waiting fail now",
                    self.limits.line
                );
                self.ended = true;
            }
        }
        let limits = self.limits;
        let out = std::mem::take(&mut self.out);
        let mut held = std::mem::take(&mut self.held);
        held.clear();
        held.shrink_to(2 * limits.keep + UNIT_MAX);
        let ended = self.ended;
        *self = Cutter::new(limits);
        self.out = out;
        self.held = held;
        self.ended = ended;
    }

    /// The error that answers request `id` in place of a line over the
    /// limit.
    fn answer_too_large(&mut self, id: Value) {
        self.answered = true;
        let message = format!(
            "its answer is over {} bytes ({} MiB, the most hermitcrab takes in one message) even \
             with each string over {} bytes cut to its two ends",
            self.limits.line,
            self.limits.line >> 20,
            self.limits.string
        );
        let error = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32603, "message": message, "data": {"hermitcrab": TOO_LARGE}}});
        self.out.extend(error.to_string().bytes());
        self.out.push(b'\n');
    }
}

/// The mark (`error.data.hermitcrab`) of the error that stands for an
/// answer over the limit.
pub(crate) const TOO_LARGE: &str = "too_large";

/// The mark (`error.data.hermitcrab`) of the error that stands for an
/// answer that is not JSON-RPC as a client reads it (see
/// [`crate::stdio`]).
pub(crate) const MALFORMED: &str = "malformed";

/// The first place at or after `from + at_least` in a string's content
/// (from `from`, a boundary) where a piece starts: never inside a UTF-8
/// character or an escape (a surrogate pair is one piece).
fn boundary(content: &[u8], from: usize, at_least: usize) -> usize {
    let mut at = from;
    while at < content.len() && at - from < at_least {
        at += piece_len(&content[at..]);
    }
    at.min(content.len())
}

/// The length of the piece `content` starts with.
fn piece_len(content: &[u8]) -> usize {
    let len = match content {
        [b'\\', b'u', rest @ ..] => {
            let high = rest
                .get(..4)
                .and_then(hex)
                .is_some_and(|u| (0xD800..0xDC00).contains(&u));
            let low = rest
                .get(6..10)
                .and_then(hex)
                .is_some_and(|u| (0xDC00..0xE000).contains(&u));
            if high && low && rest.get(4..6) == Some(&b"\\u"[..]) {
                12
            } else {
                6
            }
        }
        [b'\\', ..] => 2,
        [0xC0..=0xDF, ..] => 2,
        [0xE0..=0xEF, ..] => 3,
        [0xF0..=0xF7, ..] => 4,
        _ => 1,
    };
    len.min(content.len()).max(1)
}

/// Four hex digits' value.
fn hex(digits: &[u8]) -> Option<u32> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|d| u32::from_str_radix(d, 16).ok())
}

#[cfg(test)]
mod tests;
