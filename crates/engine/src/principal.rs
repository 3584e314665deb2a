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

/// A program as a read found it: its id, name and body.
pub(crate) struct Declared<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub body: serde_json::Value,
}

/// The verdicts on programs already judged, by program id: the version
/// judged (its item, as the store's version cache shares it — a version
/// never changes, so the same item is the same verdict) and what was
/// found. On a shared store this spares every run of a program a round
/// trip to ask who wrote it.
type Judged = std::sync::Arc<
    std::sync::Mutex<
        std::collections::HashMap<String, (std::sync::Weak<substrate::ChunkItem>, Option<Foreign>)>,
    >,
>;

/// The people and declarations an engine takes as its person's own.
#[derive(Clone, Debug, Default)]
pub struct Principal {
    /// People the person trusts for this project (`[team] trust`): their
    /// programs are taken as the person's own.
    pub trusted: Vec<String>,
    /// hc's own program declarations (chunk id → name and body): whoever
    /// committed one, as it is it grants what hc grants.
    pub own_programs: BTreeMap<String, (String, serde_json::Value)>,
    /// Verdicts kept (see [`Judged`]).
    judged: Judged,
}

impl Principal {
    /// Takes the people `trusted` and hc's declarations `own_programs` as
    /// its person's own.
    pub fn new(
        trusted: Vec<String>,
        own_programs: BTreeMap<String, (String, serde_json::Value)>,
    ) -> Principal {
        Principal {
            trusted,
            own_programs,
            judged: Judged::default(),
        }
    }

    /// Whether `item` (a program's live version, as `snap` read it) is
    /// foreign to `me` ([`Principal::foreign`]), remembered by version.
    pub(crate) fn foreign_program(
        &self,
        snap: &Snapshot<'_>,
        me: &str,
        item: &std::sync::Arc<substrate::ChunkItem>,
    ) -> Result<Option<Foreign>> {
        let lock = || {
            self.judged
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some((seen, verdict)) = lock().get(&item.id)
            && seen
                .upgrade()
                .is_some_and(|seen| std::sync::Arc::ptr_eq(&seen, item))
        {
            return Ok(verdict.clone());
        }
        let body = item.body_value();
        // (a served program's verdict is its service's, which may change
        // apart from it: asked each time)
        let served = body.get("served_by").is_some();
        let declared = Declared {
            id: &item.id,
            name: item.name.as_deref().unwrap_or_default(),
            body,
        };
        let verdict = self.foreign(snap, me, &[declared])?.into_iter().next();
        if !served {
            let seen = std::sync::Arc::downgrade(item);
            lock().insert(item.id.clone(), (seen, verdict.clone()));
        }
        Ok(verdict)
    }

    /// Among `programs` (id, name and body, as `snap` sees them), those
    /// whose declaration is neither `me`'s, a trusted person's, nor hc's
    /// own as hc declares it. A served program (an MCP server's tool) is
    /// judged by its service: it runs there, with the service's reach.
    pub(crate) fn foreign(
        &self,
        snap: &Snapshot<'_>,
        me: &str,
        programs: &[Declared<'_>],
    ) -> Result<Vec<Foreign>> {
        let mut judged = Vec::with_capacity(programs.len());
        // (a server's tools share their service: it is looked up once)
        let mut services: std::collections::HashMap<&str, Authority> = Default::default();
        for program in programs {
            let served = program.body.get("served_by").and_then(|s| s.as_str());
            let by = match served.and_then(|s| services.get(s)) {
                Some(known) => known.clone(),
                None => authority(snap, program)?,
            };
            if let Some(service) = served.filter(|_| by.id != program.id) {
                services.entry(service).or_insert_with(|| by.clone());
            }
            judged.push((program.id, by));
        }
        let ids: Vec<String> = judged.iter().map(|(_, a)| a.id.clone()).collect();
        let authors = snap.authors(&ids)?;
        if authors.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (id, by) in judged {
            let Some(author) = authors.get(&by.id) else {
                continue;
            };
            let accepted = author
                .as_deref()
                .is_some_and(|p| p == me || self.trusted.iter().any(|t| t == p));
            let own = (self.own_programs.get(&by.id))
                .is_some_and(|(name, body)| *name == by.name && *body == by.body);
            if !(accepted || own) {
                out.push(Foreign {
                    id: id.to_owned(),
                    by: author.clone(),
                });
            }
        }
        Ok(out)
    }
}

/// What a program's authority is judged by: itself, or — served — its
/// service (as `snap` sees it; itself when its service is not there).
#[derive(Clone)]
struct Authority {
    id: String,
    name: String,
    body: serde_json::Value,
}

fn authority(snap: &Snapshot<'_>, program: &Declared<'_>) -> Result<Authority> {
    let itself = || Authority {
        id: program.id.to_owned(),
        name: program.name.to_owned(),
        body: program.body.clone(),
    };
    let Some(service) = program.body.get("served_by").and_then(|s| s.as_str()) else {
        return Ok(itself());
    };
    let Ok(id) = crate::plan::resolve_program(snap, service) else {
        return Ok(itself());
    };
    Ok(match snap.chunk(&id)? {
        Some(item) => Authority {
            id,
            name: item.name.clone().unwrap_or_default(),
            body: item.body_value(),
        },
        None => itself(),
    })
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
            .read(|snap| {
                let x = Declared {
                    id: "program/x",
                    name: "x",
                    body: serde_json::json!({}),
                };
                principal.foreign(snap, "me", &[x])
            })
            .unwrap();
        assert!(found.is_empty());
    }
}
