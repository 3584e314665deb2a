//! The models the real Anthropic API serves, as the fake knows them: a
//! request naming any other (`opus`, a typo, a retired model) is answered
//! 404 `not_found_error` (`model: NAME`), as the API answers it — so a
//! harness that sends an alias instead of an id fails its tests, not its
//! users. Kept by hand beside the model crate's catalogue (a test there
//! checks the two agree); a script adds more (`models`).

/// A model the API serves: its id, its dated id (when it has one), its
/// name in words, when it came out.
pub struct Known {
    /// The id.
    pub id: &'static str,
    /// The dated id, when the API has one.
    pub dated: Option<&'static str>,
    /// Its display name.
    pub display: &'static str,
    /// When it was released (RFC 3339).
    pub created_at: &'static str,
}

const fn known(
    id: &'static str,
    dated: Option<&'static str>,
    display: &'static str,
    created_at: &'static str,
) -> Known {
    Known {
        id,
        dated,
        display,
        created_at,
    }
}

/// Every model the fake serves, newest first.
pub const KNOWN: &[Known] = &[
    known(
        "claude-opus-5-5",
        None,
        "Claude Opus 5.5",
        "2026-11-18T00:00:00Z",
    ),
    known(
        "claude-sonnet-5-5",
        None,
        "Claude Sonnet 5.5",
        "2026-11-18T00:00:00Z",
    ),
    known(
        "claude-haiku-5-5",
        None,
        "Claude Haiku 5.5",
        "2026-11-18T00:00:00Z",
    ),
    known(
        "claude-fable-5-2",
        None,
        "Claude Fable 5.2",
        "2026-10-28T00:00:00Z",
    ),
    known(
        "claude-fable-5-1",
        None,
        "Claude Fable 5.1",
        "2026-09-09T00:00:00Z",
    ),
    known(
        "claude-fable-5",
        None,
        "Claude Fable 5",
        "2026-07-15T00:00:00Z",
    ),
    known(
        "claude-opus-5",
        None,
        "Claude Opus 5",
        "2026-06-02T00:00:00Z",
    ),
    known(
        "claude-sonnet-5",
        None,
        "Claude Sonnet 5",
        "2026-06-02T00:00:00Z",
    ),
    known(
        "claude-opus-4-8",
        None,
        "Claude Opus 4.8",
        "2026-04-21T00:00:00Z",
    ),
    known(
        "claude-opus-4-7",
        None,
        "Claude Opus 4.7",
        "2026-03-10T00:00:00Z",
    ),
    known(
        "claude-opus-4-6",
        None,
        "Claude Opus 4.6",
        "2026-02-05T00:00:00Z",
    ),
    known(
        "claude-sonnet-4-6",
        None,
        "Claude Sonnet 4.6",
        "2026-02-17T00:00:00Z",
    ),
    known(
        "claude-opus-4-5",
        Some("claude-opus-4-5-20251101"),
        "Claude Opus 4.5",
        "2025-11-24T00:00:00Z",
    ),
    known(
        "claude-haiku-4-5",
        Some("claude-haiku-4-5-20251001"),
        "Claude Haiku 4.5",
        "2025-10-15T00:00:00Z",
    ),
    known(
        "claude-sonnet-4-5",
        Some("claude-sonnet-4-5-20250929"),
        "Claude Sonnet 4.5",
        "2025-09-29T00:00:00Z",
    ),
    known(
        "claude-opus-4-1",
        Some("claude-opus-4-1-20250805"),
        "Claude Opus 4.1",
        "2025-08-05T00:00:00Z",
    ),
    known(
        "claude-opus-4-0",
        Some("claude-opus-4-20250514"),
        "Claude Opus 4",
        "2025-05-22T00:00:00Z",
    ),
    known(
        "claude-sonnet-4-0",
        Some("claude-sonnet-4-20250514"),
        "Claude Sonnet 4",
        "2025-05-22T00:00:00Z",
    ),
    known(
        "claude-3-7-sonnet",
        Some("claude-3-7-sonnet-20250219"),
        "Claude Sonnet 3.7",
        "2025-02-24T00:00:00Z",
    ),
    known(
        "claude-3-5-haiku",
        Some("claude-3-5-haiku-20241022"),
        "Claude Haiku 3.5",
        "2024-10-22T00:00:00Z",
    ),
    known(
        "claude-3-haiku",
        Some("claude-3-haiku-20240307"),
        "Claude Haiku 3",
        "2024-03-07T00:00:00Z",
    ),
];

/// Whether the API serves `model` (an id or a dated id; the `-latest`
/// names of the 3.x models too), or the script adds it (`extra`).
pub fn serves(model: &str, extra: &[String]) -> bool {
    extra.iter().any(|m| m == model)
        || KNOWN.iter().any(|k| {
            k.id == model || k.dated == Some(model) || model.strip_suffix("-latest") == Some(k.id)
        })
}
