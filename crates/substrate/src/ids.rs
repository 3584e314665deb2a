//! Chunk ids: what a valid id looks like, which are reserved, and how new
//! ones are generated (a prefix and a time-sortable ULID).

use crate::error::Error;

/// The virtual scope that lists commits.
pub const COMMITS_ROOT: &str = "commits_root";

/// The longest id, in bytes.
pub const MAX_ID_BYTES: usize = 200;

/// Checks that `id` can name a chunk: 1–200 bytes, no control characters.
/// `what` says where the id came from, for the message.
pub fn check_id(id: &str, what: &str) -> Result<(), Error> {
    if id.is_empty() {
        return Err(Error::InvalidRequest(format!(
            "{what}: a chunk id cannot be empty"
        )));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(Error::InvalidRequest(format!(
            "{what}: chunk id `{}…` is {} bytes; ids are at most {MAX_ID_BYTES}",
            id.chars().take(40).collect::<String>(),
            id.len()
        )));
    }
    if let Some(c) = id.chars().find(|c| c.is_control()) {
        return Err(Error::InvalidRequest(format!(
            "{what}: chunk id {id:?} contains the control character {c:?}; ids are printable text"
        )));
    }
    Ok(())
}

/// Whether `id` is reserved for virtual chunks (`commits_root`, `commit/N`).
pub fn is_reserved(id: &str) -> bool {
    id == COMMITS_ROOT || commit_number(id).is_some()
}

/// The commit number in a `commit/N` id.
pub fn commit_number(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("commit/")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(feature = "ids")]
mod generate {
    use std::sync::{Mutex, PoisonError};
    use ulid::Generator;

    static GENERATOR: Mutex<Option<Generator>> = Mutex::new(None);

    /// A new id: `prefix`, `_`, and a ULID that sorts after every id this
    /// process generated before it (`c_01J…` for chunks, `p_01J…` for processes).
    pub fn new_id(prefix: &str) -> String {
        let mut guard = GENERATOR.lock().unwrap_or_else(PoisonError::into_inner);
        let generator = guard.get_or_insert_with(Generator::new);
        // `generate` fails only when 2^80 ids fall in one millisecond; a
        // fresh random ULID is then still unique, if not monotonic.
        let ulid = generator.generate().unwrap_or_else(|_| ulid::Ulid::new());
        format!("{prefix}_{ulid}")
    }
}

#[cfg(feature = "ids")]
pub use generate::new_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert!(check_id("session", "x").is_ok());
        assert!(check_id("", "x").is_err());
        assert!(check_id(&"a".repeat(201), "x").is_err());
        assert!(check_id(&"a".repeat(200), "x").is_ok());
        assert!(check_id("a\nb", "x").is_err());
    }

    #[test]
    fn reserved_ids() {
        assert!(is_reserved("commits_root"));
        assert!(is_reserved("commit/12"));
        assert!(!is_reserved("commit/"));
        assert!(!is_reserved("commit/x1"));
        assert_eq!(commit_number("commit/7"), Some(7));
    }

    #[cfg(feature = "storage")]
    #[test]
    fn generated_ids_sort_in_order() {
        let ids: Vec<String> = (0..1000).map(|_| new_id("c")).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        assert!(ids[0].starts_with("c_") && ids[0].len() == 28);
    }
}
