//! W3C trace context for the processes a run starts: every span id is
//! derived from the substrate id it stands for, so the trace the engine
//! hands a tool (`TRACEPARENT`) and the one exported from the substrate —
//! live or a year later — name the same spans.

use std::fmt;

/// The variable a process finds its trace context in.
pub const TRACEPARENT: &str = "TRACEPARENT";

/// A trace and the span a program's own spans hang under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace.
    pub trace_id: [u8; 16],
    /// The parent span.
    pub span_id: [u8; 8],
    /// Sampled.
    pub sampled: bool,
}

impl TraceParent {
    /// Parses `00-<32 hex>-<16 hex>-<2 hex>` (none: not that, or an all-zero
    /// id, which the W3C says is invalid).
    pub fn parse(text: &str) -> Option<TraceParent> {
        let mut parts = text.trim().split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        let trace_id: [u8; 16] = unhex(trace)?.try_into().ok()?;
        let span_id: [u8; 8] = unhex(span)?.try_into().ok()?;
        let flags = unhex(flags)?;
        if trace_id == [0; 16] || span_id == [0; 8] || flags.len() != 1 {
            return None;
        }
        Some(TraceParent {
            trace_id,
            span_id,
            sampled: flags[0] & 1 == 1,
        })
    }

    /// The context a process's own spans hang under: its trace, its span.
    pub fn of_process(trace_id: [u8; 16], process: &str) -> TraceParent {
        TraceParent {
            trace_id,
            span_id: span_id(process),
            sampled: true,
        }
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            u8::from(self.sampled)
        )
    }
}

/// The trace of a run started outside any trace: derived from its
/// process id.
pub fn trace_id(root: &str) -> [u8; 16] {
    let mut out = [0; 16];
    out.copy_from_slice(&digest("hc trace ", root)[..16]);
    nonzero(&mut out);
    out
}

/// The span that stands for `id` (a process, an answer, an event).
pub fn span_id(id: &str) -> [u8; 8] {
    let mut out = [0; 8];
    out.copy_from_slice(&digest("hc span ", id)[..8]);
    nonzero(&mut out);
    out
}

fn digest(prefix: &str, id: &str) -> Vec<u8> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(prefix.as_bytes());
    ctx.update(id.as_bytes());
    ctx.finish().as_ref().to_vec()
}

/// (an all-zero id is invalid; one in 2^64 digests)
fn nonzero(id: &mut [u8]) {
    if id.iter().all(|b| *b == 0) {
        id[0] = 1;
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_back_as_written() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parsed = TraceParent::parse(text).unwrap();
        assert!(parsed.sampled);
        assert_eq!(parsed.to_string(), text);
    }

    #[test]
    fn malformed_or_zero_ids_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn ids_are_derived_and_distinct() {
        assert_eq!(span_id("p1"), span_id("p1"));
        assert_ne!(span_id("p1"), span_id("p2"));
        assert_ne!(trace_id("p1")[..8], span_id("p1"));
    }
}
