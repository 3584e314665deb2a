//! Skills (`design/knowledge.md`, "Skills"), as Claude Code keeps them: a
//! folder with `SKILL.md` — front matter `name`, `description`, optional
//! `allowed-tools` — in `.hermitcrab/skills/`, `.claude/skills/`, the
//! user's `hermitcrab/skills/` and `~/.claude/skills/`. Their index
//! (`name: description`) is recorded on the context event and goes into
//! the system prompt; the `skill` tool loads one's body on demand. Also
//! the front matter reader hosts share (command files).

use crate::contract::SkillIndex;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A file's front matter (`key: value` lines between `---` lines) and
/// body; none when it has none; an error naming what is wrong.
pub fn front_matter(text: &str) -> Result<(Vec<(String, String)>, String), String> {
    let Some(rest) = text.strip_prefix("---\n") else {
        return Ok((Vec::new(), text.to_owned()));
    };
    let Some((front, body)) = rest.split_once("\n---") else {
        return Err("its front matter (after the first `---`) has no closing `---`".into());
    };
    let body = body
        .trim_start_matches('-')
        .trim_start_matches('\n')
        .to_owned();
    let mut pairs = Vec::new();
    for (n, line) in front.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("front matter line {} is not `key: value`", n + 2));
        };
        pairs.push((
            key.trim().to_owned(),
            value.trim().trim_matches('"').to_owned(),
        ));
    }
    Ok((pairs, body))
}

/// `a, b` or `[a, b]` as a list.
pub fn list(value: &str) -> Vec<String> {
    value
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The folders skills are found in, the project's first.
fn places(root: &Path, user_dir: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![root.join(".hermitcrab/skills"), root.join(".claude/skills")];
    out.extend(user_dir.map(|d| d.join("skills")));
    out.extend(home.map(|h| h.join(".claude/skills")));
    out
}

/// Every skill (a name found twice is the first place's), and what was
/// skipped, with why.
pub fn find(
    root: &Path,
    user_dir: Option<&Path>,
    home: Option<&Path>,
) -> (Vec<SkillIndex>, Vec<String>) {
    let mut found: Vec<SkillIndex> = Vec::new();
    let mut skipped = Vec::new();
    for (n, place) in places(root, user_dir, home).into_iter().enumerate() {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        // the entry's own type (no stat), links followed only when one is
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| {
                e.file_type()
                    .is_ok_and(|t| t.is_dir() || (t.is_symlink() && e.path().is_dir()))
            })
            .map(|e| e.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            let file = dir.join("SKILL.md");
            match index(&file).map(|s| SkillIndex {
                project: n < 2,
                ..s
            }) {
                Ok(skill) if found.iter().any(|s| s.name == skill.name) => skipped.push(format!(
                    "{}: a skill named `{}` was found first elsewhere, which is used",
                    file.display(),
                    skill.name
                )),
                Ok(skill) => found.push(skill),
                Err(None) => {} // a folder without SKILL.md
                Err(Some(why)) => skipped.push(format!("{}: {why}", file.display())),
            }
        }
    }
    (found, skipped)
}

/// A skill's index line; `Err(None)` when there is no such file.
fn index(file: &Path) -> Result<SkillIndex, Option<String>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(Some("it is not UTF-8 text".to_owned()));
        }
        Err(e) => return Err(Some(format!("it cannot be read: {e}"))),
    };
    let (pairs, _) = front_matter(&text)?;
    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let name = get("name")
        .or_else(|| {
            file.parent()?
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let Some(description) = get("description") else {
        return Err(Some("its front matter has no `description`".into()));
    };
    Ok(SkillIndex {
        name,
        description,
        path: file.to_string_lossy().into_owned(),
        allowed_tools: get("allowed-tools").map(|v| list(&v)).unwrap_or_default(),
        project: false,
    })
}

/// The `skill` tool's definition.
pub fn definition() -> Value {
    json!({
        "name": "skill",
        "description": "Loads a skill: its instructions, and the list of its other files \
            (read them with `read` when the instructions say to). Load one when the task \
            matches its description in the system prompt's list of skills.",
        "input_schema": {"type": "object", "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed."}},
            "required": ["name"]}
    })
}

/// The rules a loaded skill allows: its `allowed-tools` — a project's
/// only when the person trusts the project.
pub fn granted(skill: &SkillIndex, trusted: bool) -> &[String] {
    if skill.project && !trusted {
        &[]
    } else {
        &skill.allowed_tools
    }
}

/// What loading `name` answers: the body and the skill's other files; an
/// error text naming the known skills. `trusted`: the project is.
pub fn load(skills: &[SkillIndex], name: &str, trusted: bool) -> Result<String, String> {
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        return Err(format!(
            "no skill `{name}`; the skills are: {}",
            known.join(", ")
        ));
    };
    let text = std::fs::read_to_string(&skill.path)
        .map_err(|e| format!("cannot read {}: {e}", skill.path))?;
    let (_, body) = front_matter(&text)?;
    let dir = Path::new(&skill.path).parent().unwrap_or(Path::new("."));
    let mut files = Vec::new();
    collect(dir, &mut files);
    files.retain(|f| *f != Path::new(&skill.path));
    files.sort();
    let mut out = body.trim_end().to_owned();
    if !files.is_empty() {
        out.push_str("\n\nThe skill's other files:");
        for file in files.iter().take(200) {
            out.push_str(&format!("\n{}", file.display()));
        }
    }
    let granted = granted(skill, trusted);
    if !granted.is_empty() {
        out.push_str(&format!(
            "\n\nWhile this skill is active (until the run ends), these run without asking: {}",
            granted.join(", ")
        ));
    } else if !skill.allowed_tools.is_empty() {
        out.push_str(
            "\n\n(Its `allowed-tools` are not applied: the project is not trusted, and a \
             project may not grant itself power; the person can run `hc trust`.)",
        );
    }
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_reads_and_refuses_what_is_broken() {
        let (pairs, body) =
            front_matter("---\nname: x\ndescription: \"does y\"\n---\nBody\n").unwrap();
        assert_eq!(
            pairs,
            vec![
                ("name".into(), "x".into()),
                ("description".into(), "does y".into())
            ]
        );
        assert_eq!(body, "Body\n");
        assert!(
            front_matter("---\nname: x\n")
                .unwrap_err()
                .contains("no closing")
        );
        assert!(
            front_matter("---\njust words\n---\n")
                .unwrap_err()
                .contains("line 2")
        );
        assert_eq!(
            list("[read, \"shell(git:*)\"]"),
            vec!["read", "shell(git:*)"]
        );
    }
}
