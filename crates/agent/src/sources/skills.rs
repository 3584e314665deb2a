//! Skills (`design/knowledge.md`, "Skills"), as Claude Code keeps them: a
//! folder with `SKILL.md` — front matter `name`, `description`, optional
//! `allowed-tools` — in `.hermitcrab/skills/`, `.claude/skills/`, the
//! user's `hermitcrab/skills/` and `~/.claude/skills/`. Their index
//! (`name: description`) is recorded on the context event and goes into
//! the system prompt; the `skill` tool loads one's body on demand. Also
//! the front matter reader and the file reader hosts share (command
//! files).
//!
//! A project's skills, commands and custom agents reach only the project,
//! as its instruction files do ([`within`]): a folder or file that leads
//! outside it (a link in a checkout, to `~/.ssh` or anywhere) is skipped
//! and said, trusted or not — trust is judged on the project's
//! configuration, not on where its links lead. The person's own (in their
//! configuration directory or `~/.claude`) may link anywhere. A file over
//! [`MAX_FILE_BYTES`] is skipped, said, as well; and as the index goes into
//! every request, a description is cut at [`MAX_DESCRIPTION_CHARS`] and
//! what would take the index past [`MAX_INDEX_CHARS`] is left out, said.

use crate::contract::SkillIndex;
use crate::sources::context::{LEADS_OUT, within};
use serde_json::{Value, json};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The most bytes a skill's, a command's or a custom agent's file may
/// have: beyond it a file is not a prompt but a way to fill every request.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The most entries of a skill's folder its listing walks.
const MAX_WALK: usize = 2000;

/// The most characters of a skill's or custom agent's name.
pub const MAX_NAME_CHARS: usize = 64;

/// The most characters of a skill's or custom agent's description an
/// index keeps (the rest is cut).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The most characters all skills' index lines — or all custom agents' —
/// take together: they go into every request.
pub const MAX_INDEX_CHARS: usize = 50_000;

/// A skill's or custom agent's name and description as an index holds
/// them: a name too long is refused, a description cut.
pub fn indexed(name: String, description: &str) -> Result<(String, String), String> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "its name is longer than {MAX_NAME_CHARS} characters"
        ));
    }
    let description = match description.chars().nth(MAX_DESCRIPTION_CHARS) {
        Some(_) => format!(
            "{}…",
            description
                .chars()
                .take(MAX_DESCRIPTION_CHARS)
                .collect::<String>()
        ),
        None => description.to_owned(),
    };
    Ok((name, description))
}

/// What index lines take of [`MAX_INDEX_CHARS`], counted as they are
/// added: whether one more fits (and it is counted if so).
#[derive(Default)]
pub struct Budget(usize);

impl Budget {
    /// Counts `name` and `description` if they fit; `false` if they do not.
    pub fn take(&mut self, name: &str, description: &str) -> bool {
        let size = name.chars().count() + description.chars().count() + 4;
        let fits = self.0 + size <= MAX_INDEX_CHARS;
        if fits {
            self.0 += size;
        }
        fits
    }
}

/// Why an index line is left out: the others fill [`MAX_INDEX_CHARS`].
pub const OVER_BUDGET: &str = "the ones listed before it already take all the characters an \
    index may have (they go into every request), so it is not listed";

/// The text of a skill's, command's or custom agent's file; `project`:
/// the project's root when the file is the project's (it must then lead
/// nowhere outside it). `Err(None)` when there is no such file, else why
/// it is not read.
pub fn read_text(file: &Path, project: Option<&Path>) -> Result<String, Option<String>> {
    let real = match file.canonicalize() {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(file
                .symlink_metadata()
                .is_ok()
                .then(|| "it is a link that leads nowhere".to_owned()));
        }
        Err(e) => return Err(Some(format!("it cannot be read: {e}"))),
    };
    if let Some(root) = project
        && !within(root, &real)
    {
        return Err(Some(LEADS_OUT.to_owned()));
    }
    let meta = std::fs::metadata(&real).map_err(|e| Some(format!("it cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(Some("it is not a regular file".to_owned()));
    }
    let too_big = |size: u64| {
        Some(format!(
            "it is {size} bytes; a skill, command or agent file has at most {MAX_FILE_BYTES}"
        ))
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&real)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| Some(format!("it cannot be read: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| Some("it is not UTF-8 text".to_owned()))
}

/// The folders of `place` (links to folders included), sorted; a
/// project's that lead outside `project` are skipped and said.
pub fn folders(place: &Path, project: Option<&Path>, skipped: &mut Vec<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(place) else {
        return Vec::new();
    };
    if let Some(root) = project
        && !within(root, place)
    {
        skipped.push(format!("{}: {LEADS_OUT}", place.display()));
        return Vec::new();
    }
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
    dirs.retain(|dir| match project {
        Some(root) if !within(root, dir) => {
            skipped.push(format!("{}: {LEADS_OUT}", dir.display()));
            false
        }
        _ => true,
    });
    dirs
}

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
    let mut budget = Budget::default();
    for (n, place) in places(root, user_dir, home).into_iter().enumerate() {
        let project = (n < 2).then_some(root);
        for dir in folders(&place, project, &mut skipped) {
            let file = dir.join("SKILL.md");
            match index(&file, project).map(|s| SkillIndex {
                project: n < 2,
                ..s
            }) {
                Ok(skill) if found.iter().any(|s| s.name == skill.name) => skipped.push(format!(
                    "{}: a skill named `{}` was found first elsewhere, which is used",
                    file.display(),
                    skill.name
                )),
                Ok(skill) if !budget.take(&skill.name, &skill.description) => {
                    skipped.push(format!("{}: {OVER_BUDGET}", file.display()));
                }
                Ok(skill) => found.push(skill),
                Err(None) => {} // a folder without SKILL.md
                Err(Some(why)) => skipped.push(format!("{}: {why}", file.display())),
            }
        }
    }
    (found, skipped)
}

/// A skill's index line; `Err(None)` when there is no such file.
fn index(file: &Path, project: Option<&Path>) -> Result<SkillIndex, Option<String>> {
    let text = read_text(file, project)?;
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
    let (name, description) = indexed(name, &description)?;
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
    let path = Path::new(&skill.path);
    // read again as found: a project's skill is
    // `ROOT/.claude/skills/NAME/SKILL.md`, and still may not lead out
    let project = skill.project.then(|| path.ancestors().nth(4)).flatten();
    let text = read_text(path, project).map_err(|why| {
        format!(
            "cannot read {}: {}",
            skill.path,
            why.unwrap_or_else(|| "there is no such file".to_owned())
        )
    })?;
    let (_, body) = front_matter(&text)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut walk = Walk {
        project,
        files: Vec::new(),
        links_left: 0,
        budget: MAX_WALK,
    };
    walk.collect(dir);
    let mut files = walk.files;
    files.retain(|f| f != path);
    files.sort();
    let mut out = body.trim_end().to_owned();
    if !files.is_empty() {
        out.push_str("\n\nThe skill's other files:");
        for file in files.iter().take(200) {
            out.push_str(&format!("\n{}", file.display()));
        }
    }
    if walk.links_left > 0 {
        out.push_str(&format!(
            "\n\n({} links in its folder are not listed: links to folders are not followed, \
             nor a project's links that lead outside the project.)",
            walk.links_left
        ));
    }
    if walk.budget == 0 {
        out.push_str(&format!(
            "\n\n(Its folder has more than {MAX_WALK} entries: only those seen first are listed.)"
        ));
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

/// A skill folder's files, walked without following links to folders (a
/// link may loop back); a project's links out of the project left out.
struct Walk<'a> {
    /// The project's root, when the skill is the project's.
    project: Option<&'a Path>,
    files: Vec<PathBuf>,
    /// Links not listed.
    links_left: usize,
    /// Entries still to be seen.
    budget: usize,
}

impl Walk<'_> {
    fn collect(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                self.collect(&path);
            } else if kind.is_symlink() {
                let leads_out = self.project.is_some_and(|root| !within(root, &path));
                match leads_out || !path.is_file() {
                    true => self.links_left += 1,
                    false => self.files.push(path),
                }
            } else {
                self.files.push(path);
            }
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
