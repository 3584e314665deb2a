//! What outlives a session: memory entries (one fact or rule each, in the
//! project's `memory` scope or the person's `user-memory`), and the files a
//! request was given (instruction files), each committed as a chunk before
//! a request uses it.

use serde::{Deserialize, Serialize};

/// The project's memory: a scope, and the type of its entries.
pub const PROJECT_MEMORY: &str = "memory";

/// The person's memory, as this project's substrate holds it: a mirror of
/// the user-level substrate's, made by the host before a run (and what the
/// run changes in it, carried back after).
pub const USER_MEMORY: &str = "user-memory";

/// The type of a file's text as a request was given it.
pub const KNOWLEDGE_FILE: &str = "knowledge-file";

/// Which memory: the project's or the person's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScope {
    /// The project's (`memory`).
    #[default]
    Project,
    /// The person's, in every project (`user-memory`).
    User,
}

impl MemoryScope {
    /// The scope its entries are placed on (and their type).
    pub fn scope(self) -> &'static str {
        match self {
            MemoryScope::Project => PROJECT_MEMORY,
            MemoryScope::User => USER_MEMORY,
        }
    }

    /// The scope named `scope`, if it is a memory.
    pub fn of_scope(scope: &str) -> Option<MemoryScope> {
        match scope {
            PROJECT_MEMORY => Some(MemoryScope::Project),
            USER_MEMORY => Some(MemoryScope::User),
            _ => None,
        }
    }

    /// Its name as the `memory` tool and `hc memory` take it.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::Project => "project",
            MemoryScope::User => "user",
        }
    }
}

/// The body of a memory entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryEntry {
    /// The fact or rule, markdown.
    pub text: String,
    /// When it was made (RFC 3339).
    pub created: String,
    /// When its text last changed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated: Option<String>,
    /// The session that made it (none: a person, with `hc memory`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl MemoryEntry {
    /// A new entry of `text`, made now by `session`.
    pub fn new(text: &str, session: Option<&str>) -> MemoryEntry {
        MemoryEntry {
            text: text.trim().to_owned(),
            created: now(),
            updated: None,
            session: session.map(str::to_owned),
        }
    }

    /// Reads an entry's body (`None` when it is not one).
    pub fn parse(body: &serde_json::Value) -> Option<MemoryEntry> {
        serde_json::from_value::<MemoryEntry>(body.clone())
            .ok()
            .filter(|e| !e.text.is_empty())
    }
}

/// The time now, as entries record it.
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// The body of a `knowledge-file` chunk: a file's text as it was read into
/// a request. Its id is made from its path and text
/// ([`KnowledgeFile::id`]), so an unchanged file is the same chunk — no
/// new commit, no new version — and a changed one a new chunk beside the
/// old, which a past request's rebuild still reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeFile {
    /// Where it was read from.
    pub path: String,
    /// The SHA-256 of its text, lowercase hex.
    pub sha256: String,
    /// Its text, as the request has it (cut, with notes).
    pub text: String,
}

impl KnowledgeFile {
    /// The chunk of `text` read from `path`.
    pub fn new(path: &str, text: &str) -> KnowledgeFile {
        KnowledgeFile {
            path: path.to_owned(),
            sha256: sha256_hex(text.as_bytes()),
            text: text.to_owned(),
        }
    }

    /// Its chunk id: `knowledge-file/` and a digest of path and text.
    pub fn id(&self) -> String {
        let mut both = Vec::with_capacity(self.path.len() + 1 + self.sha256.len());
        both.extend_from_slice(self.path.as_bytes());
        both.push(0);
        both.extend_from_slice(self.sha256.as_bytes());
        let digest = sha256_hex(&both);
        format!("{KNOWLEDGE_FILE}/{}", &digest[..32])
    }
}

/// The SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = String::with_capacity(64);
    for b in digest.as_ref() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_id_changes_with_its_text_and_its_path_only() {
        let a = KnowledgeFile::new("/p/AGENTS.md", "rules");
        assert_eq!(a.id(), KnowledgeFile::new("/p/AGENTS.md", "rules").id());
        assert_ne!(a.id(), KnowledgeFile::new("/p/AGENTS.md", "rules!").id());
        assert_ne!(a.id(), KnowledgeFile::new("/q/AGENTS.md", "rules").id());
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(a.id().starts_with("knowledge-file/"));
    }

    #[test]
    fn a_memory_entry_without_text_is_not_one() {
        assert!(MemoryEntry::parse(&serde_json::json!({"text": ""})).is_none());
        let e = MemoryEntry::parse(&serde_json::json!({"text": "use tabs", "created": "x"}));
        assert_eq!(e.map(|e| e.text), Some("use tabs".to_owned()));
    }
}
