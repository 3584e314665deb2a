//! Whose programs a run takes at their word (decision 19, principals).
//!
//! On a shared store many people commit, and a program chunk grants what
//! it declares — the environment, the network, writes outside the project
//! — only when its declaration is the engine's own person's (the one its
//! store connects as), or that of a person they trust for the project
//! (`[team] trust`). Any other is *foreign*: it runs clamped to what a
//! built-in tool gets, never as a service, and the agent asks before each
//! call. hc's own declarations (the bootstrap's built-ins) grant what hc
//! grants whoever committed them, so long as they are as hc declares them.
//! On a file the one person wrote everything; what a file made elsewhere
//! brought is [`protocol::origin`]'s.

use crate::error::Result;
use std::collections::BTreeMap;
use substrate::{Foreign, Snapshot};

/// The people and declarations an engine takes as its person's own.
#[derive(Clone, Debug, Default)]
pub struct Principal {
    /// People the person trusts for this project (`[team] trust`): their
    /// programs are taken as the person's own.
    pub trusted: Vec<String>,
    /// hc's own program declarations (chunk id → body): whoever committed
    /// one, as it is it grants what hc grants.
    pub own_programs: BTreeMap<String, serde_json::Value>,
}

impl Principal {
    /// Among `programs` (id and body, as `snap` sees them), those whose
    /// declaration is neither `me`'s, a trusted person's, nor hc's own.
    pub(crate) fn foreign(
        &self,
        snap: &Snapshot<'_>,
        me: &str,
        programs: &[(&str, serde_json::Value)],
    ) -> Result<Vec<Foreign>> {
        let ids: Vec<String> = programs.iter().map(|(id, _)| (*id).to_owned()).collect();
        let authors = snap.authors(&ids)?;
        if authors.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (id, body) in programs {
            let Some(by) = authors.get(*id) else { continue };
            let accepted = by
                .as_deref()
                .is_some_and(|p| p == me || self.trusted.iter().any(|t| t == p));
            if accepted || self.own_programs.get(*id) == Some(body) {
                continue;
            }
            out.push(Foreign {
                id: (*id).to_owned(),
                by: by.clone(),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_a_file_nothing_is_foreign() {
        let dir = tempfile::tempdir().unwrap();
        let db = substrate::Substrate::open(dir.path().join("s.db")).unwrap();
        let principal = Principal::default();
        let found = db
            .read(|snap| principal.foreign(snap, "me", &[("program/x", serde_json::json!({}))]))
            .unwrap();
        assert!(found.is_empty());
    }
}
