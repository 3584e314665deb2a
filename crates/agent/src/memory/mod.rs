//! Memory: facts and rules that outlive a session — the project's
//! (`memory`) and the person's (`user-memory`) — rendered into every
//! request under `# Memory` (newest first, at most [`CAP_BYTES`]), and
//! changed by the agent's own tool `memory` or by a person (`hc memory`,
//! a `#` line in `hc chat`). Pure: what to render, what a change
//! declares; the run commits it.

use crate::contract::{MemoryEntry, MemoryScope, now};
use crate::sources::knowledge::Pinned;
use serde::Deserialize;
use serde_json::{Value, json};
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType};

/// The most of the memory a request holds, in bytes of its rendered
/// entries; past it, the newest are kept and a note says how many more
/// there are.
pub const CAP_BYTES: usize = 25 * 1024;

/// The `memory` tool's name.
pub const TOOL: &str = "memory";

/// The longest one entry may be, in bytes (a fact or a rule, not a file).
pub const MAX_ENTRY_BYTES: usize = 4 * 1024;

/// One memory as read: its entries, newest first, with their ids.
fn entries(pin: &Pinned) -> Vec<(&str, MemoryEntry)> {
    let mut out: Vec<(&str, MemoryEntry)> = pin
        .members
        .iter()
        .filter(|m| m.is_on(&pin.scope.id, PlacementType::Instance))
        .filter_map(|m| MemoryEntry::parse(&m.body_value()).map(|e| (m.id.as_str(), e)))
        .collect();
    // members come in creation order; the newest first
    out.reverse();
    out
}

/// The `# Memory` section of `memory` (the scopes a context event
/// names, read at its `as_of`), or `None` when there is nothing in it.
pub fn render(memory: &[Pinned]) -> Option<String> {
    let mut out = String::from(
        "# Memory\n\nWhat you were asked to keep, or chose to keep, from earlier sessions — \
         newest first. Follow it. Keep it true with the `memory` tool: add what is worth \
         knowing next time, update or remove what is wrong or out of date (by the id in \
         brackets).",
    );
    let mut used = 0;
    let mut left_out = Vec::new();
    let mut any = false;
    for pin in memory {
        let Some(scope) = MemoryScope::of_scope(&pin.scope.id) else {
            continue;
        };
        let all = entries(pin);
        if all.is_empty() {
            continue;
        }
        any = true;
        out.push_str(match scope {
            MemoryScope::Project => "\n\n## This project's memory\n",
            MemoryScope::User => "\n\n## Your memory (the person's, in every project)\n",
        });
        let mut omitted = 0;
        for (id, entry) in &all {
            let line = format!("\n- [{id}] {}", indented(&entry.text));
            if used + line.len() > CAP_BYTES {
                omitted += 1;
                continue;
            }
            used += line.len();
            out.push_str(&line);
        }
        if omitted > 0 {
            left_out.push((scope, omitted));
        }
    }
    for (scope, n) in left_out {
        let (entries, are) = if n == 1 {
            ("entry", "is")
        } else {
            ("entries", "are")
        };
        out.push_str(&format!(
            "\n\n({n} older {entries} of `{id}` {are} not shown: the memory is over {kb} KB. \
             Search them with the `scope` tool: {{\"ids\": [\"{id}\"], \"match\": \"…\"}}.)",
            id = scope.scope(),
            kb = CAP_BYTES / 1024,
        ));
    }
    any.then_some(out)
}

/// An entry's text as one list item: continuation lines indented.
fn indented(text: &str) -> String {
    text.trim().replace('\n', "\n  ")
}

/// The `memory` tool's definition.
pub fn definition() -> Value {
    json!({
        "name": "memory",
        "description": "Keeps a fact or rule for later sessions (it is shown to you under \
            `# Memory` at the start of every session): conventions, commands that work, \
            the person's preferences, decisions and their reasons. One short fact per entry. \
            `add` a new one; `update` or `remove` one by its id (in brackets in the list). \
            `scope`: `project` (default; this project only) or `user` (the person's own, in \
            every project — asks the person first). Do not keep secrets, or what the code \
            or the history already says.",
        "input_schema": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["add", "update", "remove"]},
                "text": {"type": "string", "description": "The fact or rule (add, update)."},
                "id": {"type": "string", "description": "The entry's id (update, remove)."},
                "scope": {"type": "string", "enum": ["project", "user"], "description": "Whose memory (default project)."}
            },
            "required": ["action"]
        }
    })
}

/// What the `memory` tool was asked.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum Change {
    /// A new entry.
    Add {
        /// Its text.
        text: String,
        /// Whose.
        #[serde(default)]
        scope: MemoryScope,
    },
    /// An entry's new text.
    Update {
        /// The entry.
        id: String,
        /// Its new text.
        text: String,
        /// Whose.
        #[serde(default)]
        scope: MemoryScope,
    },
    /// An entry removed.
    Remove {
        /// The entry.
        id: String,
        /// Whose.
        #[serde(default)]
        scope: MemoryScope,
    },
}

impl Change {
    /// Reads the tool's input; an error says what is wrong.
    pub fn parse(input: &Value) -> Result<Change, String> {
        let change: Change = serde_json::from_value(input.clone()).map_err(|e| {
            format!(
                "invalid input for `memory`: {e}; give `action` (add, update or remove), \
                 `text` to add or update, `id` to update or remove"
            )
        })?;
        match &change {
            Change::Add { text, .. } | Change::Update { text, .. } if text.trim().is_empty() => {
                Err("invalid input for `memory`: `text` is empty".into())
            }
            Change::Add { text, .. } | Change::Update { text, .. }
                if text.len() > MAX_ENTRY_BYTES =>
            {
                Err(format!(
                    "invalid input for `memory`: the text is {} bytes and an entry holds at \
                     most {MAX_ENTRY_BYTES}; keep one short fact per entry",
                    text.len()
                ))
            }
            _ => Ok(change),
        }
    }

    /// Whose memory it changes.
    pub fn scope(&self) -> MemoryScope {
        match self {
            Change::Add { scope, .. }
            | Change::Update { scope, .. }
            | Change::Remove { scope, .. } => *scope,
        }
    }

    /// The entry it names (none for `add`).
    pub fn id(&self) -> Option<&str> {
        match self {
            Change::Add { .. } => None,
            Change::Update { id, .. } | Change::Remove { id, .. } => Some(id),
        }
    }

    /// The declaration that makes it, by `session` (for a new entry);
    /// answers it and the entry's id.
    pub fn declaration(&self, session: Option<&str>) -> (Declaration, String) {
        let scope = self.scope().scope();
        match self {
            Change::Add { text, .. } => {
                let id = substrate::ids::new_id("m");
                let entry = MemoryEntry::new(text, session);
                let chunk = ChunkDecl::with_id(&id)
                    .create_only()
                    .body(serde_json::to_value(entry).unwrap_or_default())
                    .on(NewPlacement::instance(scope));
                (Declaration::of(vec![chunk]), id)
            }
            Change::Update { id, text, .. } => {
                let patch = json!({"text": text.trim(), "updated": now()});
                let chunk = ChunkDecl::with_id(id).merge_body(patch);
                (Declaration::of(vec![chunk]), id.clone())
            }
            Change::Remove { id, .. } => {
                let mut declaration = Declaration::default();
                declaration.remove.chunks.push(id.clone());
                (declaration, id.clone())
            }
        }
    }

    /// What the tool answers once it is made.
    pub fn done(&self, id: &str) -> String {
        let whose = match self.scope() {
            MemoryScope::Project => "this project's memory",
            MemoryScope::User => "the person's memory",
        };
        match self {
            Change::Add { .. } => format!("Kept in {whose} as [{id}], from the next session on."),
            Change::Update { .. } => format!("[{id}] in {whose} is updated."),
            Change::Remove { .. } => format!("[{id}] is removed from {whose}."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use substrate::{ChunkItem, Json, Placement};

    fn item(id: &str, scope: &str, body: Value) -> ChunkItem {
        ChunkItem {
            id: id.into(),
            name: None,
            spec: Json::from_value(&json!({})),
            body: Some(Json::from_value(&body)),
            placements: vec![Placement {
                scope: scope.into(),
                kind: PlacementType::Instance,
                seq: None,
            }],
        }
    }

    fn memory(n: usize, size: usize) -> Pinned {
        Pinned {
            scope: item("memory", "agent", json!({})),
            members: (0..n)
                .map(|i| {
                    let text = format!("{i:04} {}", "x".repeat(size));
                    item(
                        &format!("m_{i:04}"),
                        "memory",
                        json!({"text": text, "created": "t"}),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn entries_are_listed_newest_first_with_their_ids() {
        let text = render(&[memory(3, 1)]).unwrap_or_default();
        let at = |s: &str| text.find(s).unwrap_or(usize::MAX);
        assert!(at("[m_0002] 0002") < at("[m_0001] 0001"), "{text}");
        assert!(at("[m_0001]") < at("[m_0000]"), "{text}");
        assert!(!text.contains("not shown"));
    }

    #[test]
    fn past_the_cap_the_newest_are_kept_and_a_note_says_how_many_more() {
        let text = render(&[memory(500, 100)]).unwrap_or_default();
        assert!(text.len() < CAP_BYTES + 2_000, "{}", text.len());
        assert!(text.contains("[m_0499]"), "the newest is kept");
        assert!(!text.contains("[m_0000]"), "the oldest is not");
        let shown = text.matches("\n- [m_").count();
        assert!(
            text.contains(&format!(
                "({} older entries of `memory` are not shown",
                500 - shown
            )),
            "{}",
            &text[text.len() - 300..]
        );
    }

    #[test]
    fn an_empty_memory_renders_nothing() {
        assert_eq!(render(&[memory(0, 1)]), None);
    }

    #[test]
    fn bad_changes_say_what_is_wrong() {
        assert!(Change::parse(&json!({"action": "add"})).is_err());
        assert!(Change::parse(&json!({"action": "add", "text": "  "})).is_err());
        assert!(Change::parse(&json!({"action": "remove"})).is_err());
        let big = "x".repeat(MAX_ENTRY_BYTES + 1);
        let e = Change::parse(&json!({"action": "add", "text": big})).unwrap_err();
        assert!(e.contains("at most"), "{e}");
        let ok = Change::parse(&json!({"action": "add", "text": "t", "scope": "user"}));
        assert_eq!(ok.map(|c| c.scope()), Ok(MemoryScope::User));
    }
}
