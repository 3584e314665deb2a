//! Ids the agent makes for chunks it must name before they exist (a
//! context event other placements point at).

/// A new id: `prefix`, `_`, and a ULID.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new())
}
