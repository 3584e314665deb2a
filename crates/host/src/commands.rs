//! Slash commands from files (`design/knowledge.md`, "Commands"), as
//! Claude Code keeps them: `NAME.md` in `.hermitcrab/commands/`,
//! `.claude/commands/` and the user's `hermitcrab/commands/` and
//! `~/.claude/commands/` (a subfolder gives `dir:name`; the project's win).
//! Front matter `description`, `argument-hint`, `allowed-tools`, `model`;
//! the body is the prompt, `$ARGUMENTS` and `$1`…`$9` filled; a
//! `` !`cmd` `` line is run as the `shell` program runs, if the run's
//! permissions allow it without asking, and its output put in its place.
//! A project's command files reach only the project (`agent::sources::skills`): a
//! file or subfolder that leads outside it is skipped and said, trusted or
//! not; subfolders are read one level deep, links to folders never walked
//! further.

use agent::AgentConfig;
use agent::permissions::Decision;
use anyhow::{Result, bail};
use engine::{Context, Engine};
use protocol::{ChunkDecl, NewPlacement, PlacementType, RunArgs};
use serde_json::json;
use std::path::{Path, PathBuf};

/// `hc chat`'s own slash commands (for completion, and for stream-json's
/// `slash_commands`).
pub const BUILT_IN: &[&str] = &[
    "/help",
    "/clear",
    "/compact",
    "/cost",
    "/model",
    "/add-dir",
    "/resume",
    "/rewind",
    "/sessions",
    "/agents",
    "/trace",
    "/mcp",
    "/memory",
    "/plan",
    "/exit",
];

/// One command file.
#[derive(Clone, Debug, Default)]
pub struct Command {
    /// `/NAME` (`dir:name` from a subfolder).
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// `project` or `user`.
    pub source: &'static str,
    /// What it does.
    pub description: String,
    /// How its arguments read.
    pub argument_hint: String,
    /// Rules allowed without asking while it runs.
    pub allowed_tools: Vec<String>,
    /// The model it runs on.
    pub model: Option<String>,
    /// The prompt.
    pub body: String,
}

/// The directories commands are found in, the project's first.
fn dirs(root: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut out = vec![
        (root.join(".hermitcrab/commands"), "project"),
        (root.join(".claude/commands"), "project"),
    ];
    if let Some(config) = crate::config::user_file().and_then(|f| f.parent().map(Path::to_path_buf))
    {
        out.push((config.join("commands"), "user"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        out.push((PathBuf::from(home).join(".claude/commands"), "user"));
    }
    out
}

/// Every command, and the files skipped with why; a name found twice is
/// the first place's.
pub fn find(root: &Path) -> (Vec<Command>, Vec<String>) {
    let mut found: Vec<Command> = Vec::new();
    let mut skipped = Vec::new();
    for (dir, source) in dirs(root) {
        // a project's files reach only the project
        let project = (source == "project").then_some(root);
        for (path, name) in markdown_files(&dir, project, &mut skipped) {
            if found.iter().any(|c| c.name == name) {
                continue;
            }
            match read(&path, &name, source, project) {
                Ok(command) => found.push(command),
                Err(why) => skipped.push(format!("{}: {why}", path.display())),
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    (found, skipped)
}

/// `*.md` files of `dir` and of its subfolders (one level: `sub:name`),
/// with their names; a project's folders leading outside `project` are
/// skipped and said.
fn markdown_files(
    dir: &Path,
    project: Option<&Path>,
    skipped: &mut Vec<String>,
) -> Vec<(PathBuf, String)> {
    if let Some(root) = project
        && dir.exists()
        && !agent::sources::context::within(root, dir)
    {
        skipped.push(format!(
            "{}: {}",
            dir.display(),
            agent::sources::context::LEADS_OUT
        ));
        return Vec::new();
    }
    let mut out = md_files(dir);
    for sub in agent::sources::skills::folders(dir, project, skipped) {
        let prefix = sub
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (inner, name) in md_files(&sub) {
            out.push((inner, format!("{prefix}:{name}")));
        }
    }
    out.sort();
    out
}

/// The `*.md` entries of `dir` that are not folders, with their stems.
fn md_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.is_dir() && p.extension().is_some_and(|e| e == "md"))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            Some((p, stem))
        })
        .collect()
}

/// A command file: its front matter (simple `key: value` lines) and body;
/// `project`: the project's root when the file is the project's.
fn read(
    path: &Path,
    name: &str,
    source: &'static str,
    project: Option<&Path>,
) -> Result<Command, String> {
    let text = agent::sources::skills::read_text(path, project)
        .map_err(|why| why.unwrap_or_else(|| "there is no such file".to_owned()))?;
    let mut command = Command {
        name: name.to_owned(),
        path: path.to_owned(),
        source,
        ..Command::default()
    };
    let (pairs, body) = agent::sources::skills::front_matter(&text)?;
    command.body = body;
    for (key, value) in pairs {
        match key.as_str() {
            "description" => command.description = value,
            "argument-hint" => command.argument_hint = value,
            "model" => command.model = Some(value),
            "allowed-tools" => command.allowed_tools = agent::sources::skills::list(&value),
            _ => {} // other keys (Claude Code has more) are left alone
        }
    }
    Ok(command)
}

/// The body with `$ARGUMENTS` and `$1`…`$9` filled from `args`.
pub fn fill(body: &str, args: &str) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut out = body.replace("$ARGUMENTS", args);
    for n in (1..=9).rev() {
        out = out.replace(&format!("${n}"), words.get(n - 1).copied().unwrap_or(""));
    }
    out
}

/// The prompt `/NAME ARGS` stands for, with the configuration it runs
/// under — `None` when `text` names no command file.
pub async fn expand(
    engine: &Engine,
    text: &str,
    config: &AgentConfig,
    person: &dyn crate::confirm::Confirm,
) -> Result<Option<(String, AgentConfig)>> {
    let Some(called) = text.trim_start().strip_prefix('/') else {
        return Ok(None);
    };
    let (name, args) = called
        .split_once(char::is_whitespace)
        .map_or((called, ""), |(n, a)| (n, a.trim()));
    let (commands, skipped) = find(&engine.config().project_root);
    for why in &skipped {
        eprintln!("hc: a command file is skipped: {}", crate::text::shown(why));
    }
    let Some(command) = commands.into_iter().find(|c| c.name == name) else {
        return Ok(None);
    };
    let mut config = config.clone();
    // a project may not grant itself power: its commands' `allowed-tools`
    // apply once the person trusts it
    if command.source == "user" || config.project_trusted {
        config.allow.extend(command.allowed_tools.iter().cloned());
    } else if !command.allowed_tools.is_empty() {
        eprintln!(
            "hc: /{} asks to allow {} without asking; not applied, as this project is not trusted (hc trust)",
            command.name,
            crate::text::shown(&command.allowed_tools.join(", "))
        );
    }
    if let Some(model) = &command.model {
        config.model = model.clone();
    }
    let mut prompt = String::new();
    for line in fill(&command.body, args).lines() {
        match bang(line) {
            Some(cmd) => {
                prompt.push_str(&run_line(engine, &config, person, &command.name, cmd).await?)
            }
            None => prompt.push_str(line),
        }
        prompt.push('\n');
    }
    Ok(Some((prompt.trim_end().to_owned(), config)))
}

/// The command of a `` !`cmd` `` line.
fn bang(line: &str) -> Option<&str> {
    line.trim().strip_prefix("!`")?.strip_suffix('`')
}

/// Runs a command's `` !`cmd` `` line as a `shell` run when the run's
/// permissions allow it without asking; its output.
async fn run_line(
    engine: &Engine,
    config: &AgentConfig,
    person: &dyn crate::confirm::Confirm,
    name: &str,
    cmd: &str,
) -> Result<String> {
    let root = engine.config().project_root.clone();
    let input = json!({"command": cmd});
    let refused = |why: &str| {
        anyhow::anyhow!(
            "/{name} runs `{cmd}`, which is not allowed ({why}); allow it in the command's \
             `allowed-tools`, or with --allow 'shell({cmd})'"
        )
    };
    match crate::permit::decide(config, &root, "shell", &input, false)? {
        Decision::Allow => {}
        Decision::Ask(why) if config.interactive => {
            let question = format!(
                "/{name} runs `{}` ({}). Run it? [y/N] ",
                crate::text::shown(cmd),
                crate::text::shown(&why)
            );
            let answer = person.ask(question).await.unwrap_or_default();
            if !matches!(answer.trim(), "y" | "Y" | "yes") {
                bail!("/{name} stopped: you did not allow `{cmd}`, so the command did not run");
            }
        }
        Decision::Deny(why) | Decision::Ask(why) => return Err(refused(&why)),
    }
    let output = run_for_output(engine, "shell", input).await?;
    Ok(output.map(|o| o.text).unwrap_or_default())
}

/// Runs `program` for the host with `input` as its argument, awaited: its
/// output, if it answered.
pub async fn run_for_output(
    engine: &Engine,
    program: &str,
    input: serde_json::Value,
) -> Result<Option<protocol::program::Output>> {
    let host = Context::host();
    let args = RunArgs {
        chunks: vec![
            ChunkDecl::generated()
                .body(input)
                .on(NewPlacement::instance(format!("input/{program}"))),
        ],
        ..RunArgs::default()
    };
    let process = engine.run(&host, program, args)?;
    let done = engine
        .await_processes(&host, std::slice::from_ref(&process))
        .await?;
    Ok(done
        .get(&process)
        .and_then(|r| {
            r.chunks
                .iter()
                .find(|c| c.is_on("engine/output", PlacementType::Instance))
        })
        .map(|c| protocol::program::Output::parse(&c.body_value())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_fill_in_and_front_matter_reads() {
        assert_eq!(
            fill("fix $1 in $2: $ARGUMENTS", "a b c"),
            "fix a in b: a b c"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("review.md");
        std::fs::write(
            &path,
            "---\ndescription: Review a file\nallowed-tools: [read, \"shell(git diff:*)\"]\nmodel: m\n---\nReview $1\n",
        )
        .unwrap();
        let c = read(&path, "review", "project", None).unwrap();
        assert_eq!(c.description, "Review a file");
        assert_eq!(c.allowed_tools, vec!["read", "shell(git diff:*)"]);
        assert_eq!(c.model.as_deref(), Some("m"));
        assert_eq!(c.body, "Review $1\n");
        std::fs::write(&path, "---\ndescription: x\n").unwrap();
        assert!(
            read(&path, "review", "project", None)
                .unwrap_err()
                .contains("no closing")
        );
    }
}
