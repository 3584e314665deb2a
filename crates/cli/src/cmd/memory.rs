//! `hc memory [list|add|rm|edit]`: the project's memory (its `memory`
//! scope) and the person's own (their memory substrate), as every request
//! shows them under `# Memory`. A `#` line in `hc chat` is `add`.

use crate::exit::exit;
use crate::project::Project;
use crate::user_memory;
use agent::contract::{MemoryEntry, MemoryScope, PROJECT_MEMORY, USER_MEMORY};
use agent::memory::{Change, MAX_ENTRY_BYTES};
use anyhow::{Context as _, Result};
use clap::Subcommand;
use serde_json::json;
use substrate::Substrate;

/// `hc memory`'s commands.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// The entries, newest first: this project's, then yours.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Keep a fact or rule, e.g. `hc memory add run tests with cargo nextest`.
    Add {
        /// The text (the words are joined).
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        /// In your own memory (every project), not this project's.
        #[arg(long)]
        user: bool,
    },
    /// Remove an entry by its id (or a unique prefix of one).
    Rm {
        /// The entry's id, as `hc memory list` shows it.
        id: String,
    },
    /// Edit the memory in $EDITOR: one entry by id, or all of one memory.
    Edit {
        /// The entry's id (none: every entry of the memory).
        id: Option<String>,
        /// Your own memory, not this project's (with no id).
        #[arg(long)]
        user: bool,
    },
}

/// Where the memories are: the project's substrate (when in one) and the
/// person's.
struct Stores {
    project: Option<std::sync::Arc<Substrate>>,
    user: Substrate,
}

impl Stores {
    fn open() -> Result<Stores> {
        let here = std::env::current_dir().context("cannot read the working directory")?;
        let project = match Project::find(&here) {
            Ok(project) => Some(project.open()?.0),
            Err(_) => None,
        };
        Ok(Stores {
            project,
            user: user_memory::open_store()?,
        })
    }

    /// The store holding `scope`'s memory (the person's own is theirs).
    fn of(&self, scope: MemoryScope) -> Result<&Substrate> {
        match scope {
            MemoryScope::User => Ok(&self.user),
            MemoryScope::Project => self.project.as_deref().ok_or_else(|| {
                exit(
                    2,
                    "no project here (no .hermitcrab/ in this directory or above): run `hc init` \
                     for a project's memory, or give --user for your own",
                )
            }),
        }
    }

    /// Every entry: the project's, then the person's, each newest first.
    fn all(&self) -> Result<Vec<(MemoryScope, String, MemoryEntry)>> {
        let mut out = Vec::new();
        if let Some(project) = &self.project {
            let mut own = user_memory::entries(project, PROJECT_MEMORY, None)?;
            own.reverse();
            out.extend(own.into_iter().map(|(id, e)| (MemoryScope::Project, id, e)));
        }
        let mut theirs = user_memory::entries(&self.user, USER_MEMORY, None)?;
        theirs.reverse();
        out.extend(theirs.into_iter().map(|(id, e)| (MemoryScope::User, id, e)));
        Ok(out)
    }

    /// The entry `prefix` names (an id or a unique prefix of one).
    fn find(&self, prefix: &str) -> Result<(MemoryScope, String, MemoryEntry)> {
        let all = self.all()?;
        let hits: Vec<_> = all
            .into_iter()
            .filter(|(_, id, _)| id.starts_with(prefix))
            .collect();
        match hits.len() {
            1 => Ok(hits.into_iter().next().ok_or_else(|| exit(2, "no entry"))?),
            0 => Err(exit(
                2,
                format!("no memory entry `{prefix}`; `hc memory list` shows the ids"),
            )),
            n => Err(exit(
                2,
                format!("`{prefix}` names {n} entries; give more of the id"),
            )),
        }
    }

    /// Makes `change`; the person's memory is mirrored into the project
    /// at once. Answers the entry's id.
    fn change(&self, change: &Change) -> Result<String> {
        let (declaration, id) = change.declaration(None);
        self.of(change.scope())?
            .commit(declaration, None)
            .with_context(|| "cannot change the memory")?;
        if let (MemoryScope::User, Some(project)) = (change.scope(), &self.project) {
            user_memory::sync_with(project, &self.user)?;
        }
        Ok(id)
    }
}

/// Runs `hc memory COMMAND` (`list` when none).
pub fn memory(command: Option<MemoryCommand>) -> Result<()> {
    let stores = Stores::open()?;
    if let Some(project) = &stores.project {
        user_memory::sync_with(project, &stores.user)?;
    }
    match command.unwrap_or(MemoryCommand::List { json: false }) {
        MemoryCommand::List { json } => list(&stores, json),
        MemoryCommand::Add { text, user } => {
            let scope = if user {
                MemoryScope::User
            } else {
                MemoryScope::Project
            };
            let id = add(&stores, &text.join(" "), scope)?;
            println!("kept in {} as {id}", whose(scope));
            Ok(())
        }
        MemoryCommand::Rm { id } => {
            let (scope, id, _) = stores.find(&id)?;
            stores.change(&Change::Remove {
                id: id.clone(),
                scope,
            })?;
            println!("removed {id} from {}", whose(scope));
            Ok(())
        }
        MemoryCommand::Edit {
            id: Some(_),
            user: true,
        } => Err(crate::exit::exit(
            2,
            "--user goes with `hc memory edit` alone (your memory, whole); an entry's id \
             names whose it is",
        )),
        MemoryCommand::Edit { id: Some(id), .. } => edit_one(&stores, &id),
        MemoryCommand::Edit { id: None, user } => edit_all(
            &stores,
            if user {
                MemoryScope::User
            } else {
                MemoryScope::Project
            },
        ),
    }
}

fn whose(scope: MemoryScope) -> &'static str {
    match scope {
        MemoryScope::Project => "this project's memory",
        MemoryScope::User => "your memory",
    }
}

/// Adds `text` to `scope`'s memory (a `#` line in chat too); answers its id.
fn add(stores: &Stores, text: &str, scope: MemoryScope) -> Result<String> {
    let change = Change::parse(&json!({"action": "add", "text": text, "scope": scope}))
        .map_err(|e| exit(2, e.replace("for `memory`", "")))?;
    stores.change(&change)
}

/// `#` in `hc chat`: `text` added to the project's memory (`db`).
pub fn add_to_project(db: &Substrate, text: &str) -> Result<String> {
    let change = Change::parse(&json!({"action": "add", "text": text}))
        .map_err(|e| exit(2, e.replace("for `memory`", "")))?;
    let (declaration, id) = change.declaration(None);
    db.commit(declaration, None)
        .context("cannot change the memory")?;
    Ok(id)
}

fn list(stores: &Stores, as_json: bool) -> Result<()> {
    let all = stores.all()?;
    if as_json {
        let list: Vec<_> = all
            .iter()
            .map(|(scope, id, e)| {
                json!({"id": id, "scope": scope.as_str(), "text": e.text, "created": e.created,
                       "updated": e.updated, "session": e.session})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    if all.is_empty() {
        println!(
            "no memory yet: `hc memory add TEXT` (or `# TEXT` in hc chat) keeps a fact for every \
             later session; the agent keeps its own with its `memory` tool"
        );
        return Ok(());
    }
    let ids: Vec<String> = all.iter().map(|(_, id, _)| id.clone()).collect();
    let short = crate::style::short_ids(&ids, 8);
    for scope in [MemoryScope::Project, MemoryScope::User] {
        let mine: Vec<_> = all
            .iter()
            .zip(&short)
            .filter(|((s, _, _), _)| *s == scope)
            .collect();
        if mine.is_empty() {
            continue;
        }
        println!("{} ({}):", whose(scope), mine.len());
        for ((_, _, entry), id) in mine {
            let day = entry.created.get(..10).unwrap_or(&entry.created);
            println!("  {id}  {day}  {}", crate::style::cut(&entry.text, 100));
        }
    }
    Ok(())
}

fn edit_one(stores: &Stores, prefix: &str) -> Result<()> {
    let (scope, id, entry) = stores.find(prefix)?;
    let edited = in_editor(&format!("{}\n", entry.text))?;
    let text = edited.trim();
    if text == entry.text.trim() {
        println!("{id} is unchanged");
        return Ok(());
    }
    if text.is_empty() {
        stores.change(&Change::Remove {
            id: id.clone(),
            scope,
        })?;
        println!("removed {id} (its text was emptied)");
        return Ok(());
    }
    check_size(text)?;
    stores.change(&Change::Update {
        id: id.clone(),
        text: text.to_owned(),
        scope,
    })?;
    println!("updated {id}");
    Ok(())
}

const EDIT_HEADER: &str = "\
# One entry per item: edit a text, delete an item to remove it, add an item
# (\"- text\", without an id) to add one. Lines under an item that start with
# two spaces continue it. Lines starting with # are ignored.
";

/// The whole of `scope`'s memory in the editor; what changed is made.
fn edit_all(stores: &Stores, scope: MemoryScope) -> Result<()> {
    let db = stores.of(scope)?;
    let entries = user_memory::entries(db, scope.scope(), None)?;
    let mut text = format!("# {}\n{EDIT_HEADER}", whose(scope));
    for (id, entry) in &entries {
        text.push_str(&format!(
            "- [{id}] {}\n",
            entry.text.trim().replace('\n', "\n  ")
        ));
    }
    let edited = parse_items(&in_editor(&text)?);
    let mut made = (0, 0, 0);
    for (_, text) in &edited {
        check_size(text)?;
    }
    for (id, entry) in &entries {
        match edited
            .iter()
            .find(|(e, _)| e.as_deref() == Some(id.as_str()))
        {
            None => {
                stores.change(&Change::Remove {
                    id: id.clone(),
                    scope,
                })?;
                made.2 += 1;
            }
            Some((_, text)) if text.trim() != entry.text.trim() => {
                stores.change(&Change::Update {
                    id: id.clone(),
                    text: text.clone(),
                    scope,
                })?;
                made.1 += 1;
            }
            Some(_) => {}
        }
    }
    for (_, text) in edited.iter().filter(|(id, _)| id.is_none()) {
        stores.change(&Change::Add {
            text: text.clone(),
            scope,
        })?;
        made.0 += 1;
    }
    println!(
        "{}: {} added, {} updated, {} removed",
        whose(scope),
        made.0,
        made.1,
        made.2
    );
    Ok(())
}

/// The items of an edited memory: `- [ID] text` (or `- text`, new), with
/// continuation lines.
fn parse_items(text: &str) -> Vec<(Option<String>, String)> {
    let mut items: Vec<(Option<String>, String)> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
            let rest = rest.trim();
            let (id, text) = match rest.strip_prefix('[').and_then(|r| r.split_once(']')) {
                Some((id, text)) => (Some(id.trim().to_owned()), text.trim().to_owned()),
                None => (None, rest.to_owned()),
            };
            items.push((id, text));
        } else if let (Some(last), Some(more)) = (items.last_mut(), line.strip_prefix("  ")) {
            last.1.push('\n');
            last.1.push_str(more.trim_end());
        } else if let (Some(last), false) = (items.last_mut(), line.trim().is_empty()) {
            last.1.push('\n');
            last.1.push_str(line.trim_end());
        }
    }
    items.retain(|(_, t)| !t.trim().is_empty());
    items
}

fn check_size(text: &str) -> Result<()> {
    if text.len() > MAX_ENTRY_BYTES {
        return Err(exit(
            2,
            format!(
                "an entry holds at most {MAX_ENTRY_BYTES} bytes and this one is {}: keep one \
                 short fact per entry; nothing was changed",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// `text` edited in `$VISUAL` / `$EDITOR` (else `vi`).
fn in_editor(text: &str) -> Result<String> {
    let file = tempfile::Builder::new()
        .prefix("hc-memory-")
        .suffix(".md")
        .tempfile()
        .context("cannot make a file to edit")?;
    std::fs::write(file.path(), text)?;
    crate::cmd::config::open_editor(file.path())?;
    std::fs::read_to_string(file.path()).context("cannot read the edited memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_memory_reads_back_as_items() {
        let text = "# header\n- [m_1] tabs\n  in Makefiles\n- new one\n\n* [m_2]  spaced \n";
        assert_eq!(
            parse_items(text),
            vec![
                (Some("m_1".into()), "tabs\nin Makefiles".into()),
                (None, "new one".into()),
                (Some("m_2".into()), "spaced".into()),
            ]
        );
    }
}
