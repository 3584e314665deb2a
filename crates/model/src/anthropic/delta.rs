//! A fast path for the event most of a stream is made of:
//! `{"type":"content_block_delta","index":N,"delta":{"type":"…_delta","…":"…"}}`
//! with one string payload. Read in one pass without building serde
//! structures; anything else — other keys, a citation, a control character,
//! an odd shape — returns `None` and goes to the general serde path, which
//! also reports every error. Keys may come in any order, with any
//! whitespace, as JSON allows.

use std::borrow::Cow;

/// A text, thinking, signature or tool-input delta.
#[derive(Debug, PartialEq)]
pub(crate) struct ContentDelta<'a> {
    pub index: usize,
    pub kind: &'a str,
    pub payload: Cow<'a, str>,
}

/// How the API lays the event out, byte for byte, up to the index.
const API_HEAD: &str = r#"{"type":"content_block_delta","index":"#;

/// The delta in `data`, if it has the common shape.
pub(crate) fn parse_content_delta(data: &str) -> Option<ContentDelta<'_>> {
    data.strip_prefix(API_HEAD)
        .and_then(|_| api_layout(data))
        .or_else(|| any_layout(data))
}

/// The event exactly as the API lays it out —
/// `{"type":"content_block_delta","index":N,"delta":{"type":"K","P":"…"}}`
/// — read by matching its fixed parts instead of parsing its keys.
fn api_layout(data: &str) -> Option<ContentDelta<'_>> {
    let mut r = Reader {
        text: data,
        at: API_HEAD.len(),
    };
    let index = r.unsigned()?;
    r.literal(r#","delta":{"type":"#)?;
    let kind = r.plain_string()?;
    r.literal(",\"")?;
    r.literal(payload_key(kind)?)?;
    r.literal("\":")?;
    let payload = r.string()?;
    r.literal("}}")?;
    r.skip_ws();
    (r.at == data.len()).then_some(ContentDelta {
        index,
        kind,
        payload,
    })
}

/// The same event with its keys in any order and any whitespace.
fn any_layout(data: &str) -> Option<ContentDelta<'_>> {
    let mut r = Reader { text: data, at: 0 };
    let (mut is_delta, mut index, mut delta) = (false, None, None);
    r.object(|r, key| {
        match key {
            "type" => is_delta = r.plain_string()? == "content_block_delta",
            "index" => index = Some(r.unsigned()?),
            "delta" => delta = Some(r.delta()?),
            _ => return None,
        }
        Some(())
    })?;
    r.skip_ws();
    let (kind, payload) = delta?;
    (is_delta && r.at == data.len()).then_some(ContentDelta {
        index: index?,
        kind,
        payload,
    })
}

/// The payload's key for each delta type.
fn payload_key(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "text_delta" => "text",
        "input_json_delta" => "partial_json",
        "thinking_delta" => "thinking",
        "signature_delta" => "signature",
        _ => return None,
    })
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_ws(&mut self) {
        while matches!(
            self.bytes().get(self.at),
            Some(b' ' | b'\t' | b'\n' | b'\r')
        ) {
            self.at += 1;
        }
    }

    /// Exactly `text`, next.
    fn literal(&mut self, text: &str) -> Option<()> {
        self.text[self.at..]
            .starts_with(text)
            .then(|| self.at += text.len())
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_ws();
        (self.bytes().get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// `{ "key": value, … }`, calling `field` for each key.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        loop {
            self.skip_ws();
            let key = self.plain_string()?;
            self.eat(b':')?;
            self.skip_ws();
            field(self, key)?;
            self.skip_ws();
            match self.bytes().get(self.at)? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The delta object: its type, and its one payload.
    fn delta(&mut self) -> Option<(&'a str, Cow<'a, str>)> {
        let (mut kind, mut payload) = (None, None);
        self.object(|r, key| {
            if key == "type" {
                kind = Some(r.plain_string()?);
            } else if payload.is_none() && payload_key_known(key) {
                payload = Some((key, r.string()?));
            } else {
                return None;
            }
            Some(())
        })?;
        let (kind, (key, payload)) = (kind?, payload?);
        (payload_key(kind)? == key).then_some((kind, payload))
    }

    /// A string without escapes (keys and type names).
    fn plain_string(&mut self) -> Option<&'a str> {
        match self.string()? {
            Cow::Borrowed(s) => Some(s),
            Cow::Owned(_) => None,
        }
    }

    /// A string, borrowed when it has no escapes; `None` at a control
    /// character (serde's path reports it).
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.bytes();
        if bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            i += special(bytes.get(i..)?)?;
            match bytes[i] {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                _ => return None,
            }
        }
        let raw = self.text.get(start..i)?;
        self.at = i + 1;
        if escaped {
            unescape(raw).map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(raw))
        }
    }

    fn unsigned(&mut self) -> Option<usize> {
        let bytes = self.bytes();
        let start = self.at;
        while bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = self.text.get(start..self.at)?;
        if digits.len() > 1 && digits.starts_with('0') {
            return None;
        }
        digits.parse().ok()
    }
}

/// Where the first byte that ends a plain run inside a JSON string is (`"`,
/// `\\` or a control character), eight bytes at a time: payloads are tens
/// of bytes, too short for a vectorised search's set-up, too long for a
/// byte loop. The classic "has a zero byte" bit trick; a borrow can only
/// flag bytes above a real hit, so the lowest flag is exact.
fn special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let mut w = [0; 8];
        w.copy_from_slice(word);
        let w = u64::from_le_bytes(w);
        let hits = (zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGH;
        if hits != 0 {
            return Some(at + hits.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let tail = words.remainder().iter();
    tail.clone()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|p| at + p)
}

/// The text of a JSON string body with escapes (`\\n`, `\\uXXXX`, …)
/// resolved; `None` for an invalid escape.
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let mut chars = rest[at + 1..].chars();
        let c = match chars.next()? {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                let (c, used) = unicode_escape(&rest[at + 2..])?;
                out.push(c);
                rest = &rest[at + 2 + used..];
                continue;
            }
            _ => return None,
        };
        out.push(c);
        rest = chars.as_str();
    }
    out.push_str(rest);
    Some(out)
}

/// `XXXX` (after `\\u`), or a surrogate pair `XXXX\\uYYYY`: the character
/// and how many bytes it took.
fn unicode_escape(s: &str) -> Option<(char, usize)> {
    // `from_str_radix` alone would take a sign: `\u+041` is not JSON.
    let hex = |s: &str| {
        let digits = s
            .get(..4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))?;
        u32::from_str_radix(digits, 16).ok()
    };
    let first = hex(s)?;
    if (0xD800..0xDC00).contains(&first) {
        let low = s
            .get(4..6)
            .filter(|p| *p == "\\u")
            .and_then(|_| hex(&s[6..]))?;
        if !(0xDC00..0xE000).contains(&low) {
            return None;
        }
        let c = 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00);
        return char::from_u32(c).map(|c| (c, 10));
    }
    char::from_u32(first).map(|c| (c, 4))
}

fn payload_key_known(key: &str) -> bool {
    matches!(key, "text" | "partial_json" | "thinking" | "signature")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn delta(index: usize, kind: &'static str, payload: &str) -> ContentDelta<'static> {
        ContentDelta {
            index,
            kind,
            payload: Cow::Owned(payload.to_owned()),
        }
    }

    #[test]
    fn reads_the_common_shapes() {
        let d = parse_content_delta(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        )
        .unwrap();
        assert_eq!(d, delta(0, "text_delta", "Hello"));
        assert!(matches!(d.payload, Cow::Borrowed(_)));
        let d = parse_content_delta(
            r#" { "delta" : { "partial_json" : "{\"a\": \"é\\n\"", "type" : "input_json_delta" } , "index" : 12, "type" : "content_block_delta" }  "#,
        )
        .unwrap();
        assert_eq!(d, delta(12, "input_json_delta", "{\"a\": \"é\\n\""));
    }

    #[test]
    fn escapes_are_resolved_as_serde_would() {
        for raw in [
            r#"plain"#,
            r#"q\"uote\\back\/slash\b\f\n\r\t"#,
            r#"\u00e9t\u00E9 \ud83e\udd80 \u0000"#,
        ] {
            let quoted = format!("\"{raw}\"");
            let expected: String = serde_json::from_str(&quoted).unwrap();
            assert_eq!(unescape(raw).unwrap(), expected, "{raw}");
        }
        for bad in [
            r#"\x"#,
            r#"\u12"#,
            r#"\u+041"#,
            r#"\ud83e"#,
            r#"\ud83e\u0041"#,
            "\\",
        ] {
            assert_eq!(unescape(bad), None, "{bad}");
        }
    }

    #[test]
    fn anything_else_goes_to_the_general_path() {
        for data in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","thinking":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"extra":1}"#,
            r#"{"type":"content_block_start","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}"#,
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\nb\"}}",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} x"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"#,
            r#"{"type":"content_block_delta","index":0}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","thinking":"x"}}"#,
            r#"{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","citation":{}}}"#,
        ] {
            assert_eq!(parse_content_delta(data), None, "{data}");
        }
    }

    /// `fast` is what serde reads in `data` (whose payload is under `key`).
    fn read_as_serde_does(
        fast: Option<ContentDelta>,
        data: &str,
        key: &str,
    ) -> Result<(), TestCaseError> {
        let value: serde_json::Value = serde_json::from_str(data).unwrap();
        let fast = fast.unwrap();
        prop_assert_eq!(fast.index as u64, value["index"].as_u64().unwrap());
        prop_assert_eq!(fast.kind, value["delta"]["type"].as_str().unwrap());
        prop_assert_eq!(&*fast.payload, value["delta"][key].as_str().unwrap());
        Ok(())
    }

    proptest! {
        /// The word-at-a-time search finds what a byte loop finds.
        #[test]
        fn special_finds_the_first_stop(
            bytes in prop::collection::vec(prop_oneof![20 => 0x23u8..0x5c, 20 => 0x80u8..=0xff, 1 => any::<u8>()], 0..40)
        ) {
            let expected = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
            prop_assert_eq!(special(&bytes), expected);
        }

        /// The API's own layout takes the quickest path, and reads as serde
        /// does.
        #[test]
        fn the_api_layout_agrees_with_serde(
            payload in "[ -~éß🦀\n\t\"\\\\]{0,40}",
            index in 0usize..1000,
            kind in prop::sample::select(vec!["text_delta", "input_json_delta", "thinking_delta", "signature_delta"]),
            trail in prop::sample::select(vec!["", " ", "\n"]),
        ) {
            let key = payload_key(kind).unwrap();
            let p = serde_json::to_string(&payload).unwrap();
            let data = format!("{{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"{kind}\",\"{key}\":{p}}}}}{trail}");
            read_as_serde_does(api_layout(&data), &data, key)?;
        }

        /// Whatever the fast path accepts, serde reads the same way.
        #[test]
        fn agrees_with_serde(
            payload in "[ -~éß🦀\n\t\"\\\\]{0,40}",
            index in 0usize..1000,
            kind in prop::sample::select(vec!["text_delta", "input_json_delta", "thinking_delta", "signature_delta"]),
            swap in any::<bool>(),
            space in prop::sample::select(vec!["", " ", "\n  "]),
        ) {
            let key = payload_key(kind).unwrap();
            let p = serde_json::to_string(&payload).unwrap();
            let inner = if swap {
                format!("{{{space}\"{key}\":{space}{p},\"type\":\"{kind}\"}}")
            } else {
                format!("{{\"type\":\"{kind}\",{space}\"{key}\":{p}}}")
            };
            let data = format!("{{\"index\":{index},{space}\"delta\":{inner},\"type\":\"content_block_delta\"}}");
            read_as_serde_does(parse_content_delta(&data), &data, key)?;
        }
    }
}
