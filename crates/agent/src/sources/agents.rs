//! Custom agents (`design/knowledge.md`, "Custom agents"), as Claude Code
//! keeps them: `NAME.md` in `.hermitcrab/agents/`, `.claude/agents/`, the
//! user's `hermitcrab/agents/` and `~/.claude/agents/` — front matter
//! `name`, `description`, `tools` (the only tools offered), `model`; the
//! body is the sub-agent's system prompt. The `agent` tool's
//! `subagent_type` names one; the list is recorded on the context event.
//! A project's definitions reach only the project, as its skills do
//! ([`crate::sources::skills`]): one that leads outside it is skipped and said.

use crate::contract::AgentIndex;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A custom agent a program defined (the Agent SDK's `agents`), kept in
/// the run's configuration: it comes before any file's of the same name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentSpec {
    /// Its name (`subagent_type`).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its system prompt.
    pub prompt: String,
    /// The only tools it is offered (program names; none: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Its model (none: the parent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl AgentSpec {
    /// As a definition found in a file is.
    pub fn def(&self) -> AgentDef {
        AgentDef {
            name: self.name.clone(),
            description: self.description.clone(),
            tools: self.tools.clone(),
            model: self.model.clone(),
            prompt: self.prompt.clone(),
            path: PathBuf::from("(defined by the program driving the run)"),
        }
    }
}

/// One custom agent's definition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentDef {
    /// Its name (`subagent_type`).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The only tools it is offered (none: all).
    pub tools: Option<Vec<String>>,
    /// Its model (none: the parent's).
    pub model: Option<String>,
    /// Its system prompt.
    pub prompt: String,
    /// Its file.
    pub path: PathBuf,
}

impl AgentDef {
    /// As the context event lists it.
    pub fn index(&self) -> AgentIndex {
        AgentIndex {
            name: self.name.clone(),
            description: self.description.clone(),
        }
    }
}

/// Every custom agent (a name found twice is the first place's), and what
/// was skipped, with why.
pub fn find(
    root: &Path,
    user_dir: Option<&Path>,
    home: Option<&Path>,
) -> (Vec<AgentDef>, Vec<String>) {
    // (folder, the project's): a project's reach only the project
    let mut dirs = vec![
        (root.join(".hermitcrab/agents"), true),
        (root.join(".claude/agents"), true),
    ];
    dirs.extend(user_dir.map(|d| (d.join("agents"), false)));
    dirs.extend(home.map(|h| (h.join(".claude/agents"), false)));
    let mut found: Vec<AgentDef> = Vec::new();
    let mut skipped = Vec::new();
    let mut budget = crate::sources::skills::Budget::default();
    for (dir, project) in dirs {
        let project = project.then_some(root);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        if let Some(root) = project
            && !crate::sources::context::within(root, &dir)
        {
            let why = crate::sources::context::LEADS_OUT;
            skipped.push(format!("{}: {why}", dir.display()));
            continue;
        }
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for file in files {
            match read(&file, project) {
                Ok(def) if found.iter().any(|f| f.name == def.name) => {}
                Ok(def) if !budget.take(&def.name, &def.description) => {
                    let why = crate::sources::skills::OVER_BUDGET;
                    skipped.push(format!("{}: {why}", file.display()));
                }
                Ok(def) => found.push(def),
                Err(why) => skipped.push(format!("{}: {why}", file.display())),
            }
        }
    }
    (found, skipped)
}

/// A definition from `file`; `project`: the project's root when the file
/// is the project's.
fn read(file: &Path, project: Option<&Path>) -> Result<AgentDef, String> {
    let text = crate::sources::skills::read_text(file, project)
        .map_err(|why| why.unwrap_or_else(|| "there is no such file".to_owned()))?;
    let (pairs, body) = crate::sources::skills::front_matter(&text)?;
    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let name = get("name")
        .or_else(|| file.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let Some(description) = get("description") else {
        return Err("its front matter has no `description`".into());
    };
    let (name, description) = crate::sources::skills::indexed(name, &description)?;
    Ok(AgentDef {
        name,
        description,
        tools: get("tools").map(|t| {
            crate::sources::skills::list(&t)
                .iter()
                .map(|n| tool_name(n))
                .collect()
        }),
        model: get("model").filter(|m| !m.is_empty() && m != "inherit"),
        prompt: body.trim().to_owned(),
        path: file.to_owned(),
    })
}

/// A tool as hermitcrab names it, from Claude Code's name or its own.
pub fn tool_name(name: &str) -> String {
    crate::names::program_of(name).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_reads_with_claude_codes_tool_names() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("reviewer.md");
        std::fs::write(&file, "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, glob\nmodel: inherit\n---\nYou review.\n").unwrap();
        let def = read(&file, None).unwrap();
        assert_eq!(
            def.tools,
            Some(vec!["read".into(), "grep".into(), "glob".into()])
        );
        assert_eq!(def.model, None);
        assert_eq!(def.prompt, "You review.");
    }
}
