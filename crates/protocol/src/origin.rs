//! Where a substrate file was made, and what in it is not trusted: the
//! body of the chunk [`ORIGIN`], which only a host writes (the engine
//! refuses every process's change to it).
//!
//! A checkout may ship its own `.hermitcrab/substrate.db`. What such a
//! file declares was made by someone else, on another machine: until the
//! person trusts the project (`hc trust`), its programs run only with the
//! person's yes and never with more than a built-in's capabilities, and
//! the "always" answers recorded in it allow nothing. A host tells a
//! substrate it made from one it found by [`Origin::stamp`]: a digest of
//! the file's path and identity on this machine (device, inode, birth
//! time), which a file made elsewhere cannot carry.

use serde::{Deserialize, Serialize};

/// The chunk whose body is an [`Origin`].
pub const ORIGIN: &str = "engine/origin";

/// A substrate file's origin, as the host that opened it recorded it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The file's stamp when a host made it here, adopted it or the
    /// person trusted it (hex SHA-256); a file copied or shipped from
    /// elsewhere has another.
    #[serde(default)]
    pub stamp: String,
    /// The commit the file was at when a host on this machine first found
    /// it made elsewhere: everything committed up to it is a stranger's.
    /// `None`: made here, or trusted since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopted_at: Option<u64>,
    /// Program chunk ids the file declared before it was adopted, not
    /// changed since: they run only clamped (see the engine's planner)
    /// and only with the person's yes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<String>,
    /// Permission decisions recorded before it was adopted: an "always"
    /// among them allows nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<String>,
}

impl Origin {
    /// Reads a body; anything unreadable is an origin of nothing (no
    /// stamp: a host adopts the file again).
    pub fn parse(body: &serde_json::Value) -> Origin {
        serde_json::from_value(body.clone()).unwrap_or_default()
    }

    /// Whether program `id` is one the file brought from elsewhere.
    pub fn distrusts(&self, id: &str) -> bool {
        self.programs.iter().any(|p| p == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_round_trips_and_junk_is_nothing() {
        let origin = Origin {
            stamp: "ab".into(),
            adopted_at: Some(7),
            programs: vec!["program/x".into()],
            decisions: Vec::new(),
        };
        let body = serde_json::to_value(&origin).unwrap();
        assert_eq!(Origin::parse(&body), origin);
        assert!(Origin::parse(&body).distrusts("program/x"));
        assert_eq!(Origin::parse(&serde_json::json!(3)), Origin::default());
    }
}
