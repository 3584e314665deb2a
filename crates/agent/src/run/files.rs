//! What a run reads from files before its first call — the instruction
//! files (or, for a sub-agent, its parent's, from their chunks), the git
//! facts, the skills and the custom agents — read on threads of their own
//! while the run's reads of the engine go on, and recorded on its context
//! event (the instruction files as `knowledge-file` chunks it names).

use crate::catalog;
use crate::config::AgentConfig;
use crate::contract::{ContextBody, GitFacts, Instructions, KnowledgeFile, SkillIndex};
use crate::sources::agents::AgentDef;
use protocol::Client;
use protocol::program::ProgramError;
use std::path::{Path, PathBuf};

/// What a sub-agent's `context` argument hands it of its parent's
/// knowledge besides the pins: the instruction files (by chunk) and the
/// git facts its parent's request had.
pub(super) struct Inherited {
    instructions: Vec<Instructions>,
    git: Option<GitFacts>,
}

impl Inherited {
    /// What `body` (a `context` argument) hands on, if it hands any.
    pub fn of(body: &serde_json::Value) -> Option<Inherited> {
        let instructions = serde_json::from_value(body.get("instructions")?.clone()).ok()?;
        let git = serde_json::from_value(body["git"].clone()).ok();
        Some(Inherited { instructions, git })
    }
}

/// Everything a run read from files.
pub(super) struct FromFiles {
    instructions: Vec<Instructions>,
    /// The chunks of the instruction files read now (none inherited).
    chunks: Vec<KnowledgeFile>,
    git: Option<GitFacts>,
    skills: Vec<SkillIndex>,
    agents: Vec<AgentDef>,
    skipped: Vec<String>,
}

impl FromFiles {
    /// Reads them: git on a thread, the files on another.
    pub async fn read(
        client: &Client,
        config: &AgentConfig,
        root: &Path,
        home: Option<PathBuf>,
        inherited: Option<Inherited>,
    ) -> Result<FromFiles, ProgramError> {
        let project = root.to_path_buf();
        let root = root.to_path_buf();
        let user = config.user_config_dir.clone().map(PathBuf::from);
        let working = config.working_dir.clone().map(PathBuf::from);
        let git = match &inherited {
            Some(_) => None,
            None => {
                let root = root.clone();
                Some(tokio::task::spawn_blocking(move || {
                    crate::sources::context::git_facts(&root)
                }))
            }
        };
        let own = inherited.is_none();
        let given: Vec<AgentDef> = config.agents.iter().map(|a| a.def()).collect();
        let files = tokio::task::spawn_blocking(move || {
            let home = home.as_deref();
            let (skills, mut skipped) = crate::sources::skills::find(&root, user.as_deref(), home);
            let (found, more) = crate::sources::agents::find(&root, user.as_deref(), home);
            skipped.extend(more);
            let mut agents = given;
            for def in found {
                if !agents.iter().any(|a| a.name == def.name) {
                    agents.push(def);
                }
            }
            let instructions = match own {
                true => {
                    crate::sources::context::read_instructions(&crate::sources::context::Places {
                        root: &root,
                        working: working.as_deref(),
                        user_dir: user.as_deref(),
                        home,
                    })
                }
                false => Vec::new(),
            };
            (instructions, skills, agents, skipped)
        });
        let inherited_files = match &inherited {
            Some(parent) => {
                let mut context = ContextBody {
                    instructions: parent.instructions.clone(),
                    ..ContextBody::default()
                };
                catalog::fill_files(client, &mut context).await?;
                Some(context.instructions)
            }
            None => None,
        };
        let joined = |e: tokio::task::JoinError| ProgramError::Other(format!("reading files: {e}"));
        let (mut instructions, mut skills, mut agents, skipped) = files.await.map_err(joined)?;
        let keep = |path: &Path| config.keeps_source(&project, path);
        instructions.retain(|i| keep(Path::new(&i.path)));
        skills.retain(|s| keep(Path::new(&s.path)));
        // (an agent given by the program has no file)
        agents.retain(|a| a.path.as_os_str().is_empty() || keep(&a.path));
        let git = match git {
            Some(reading) => reading.await.map_err(joined)?,
            None => inherited.and_then(|p| p.git),
        };
        let mut chunks = Vec::new();
        match inherited_files {
            Some(theirs) => instructions = theirs,
            None => {
                for file in &mut instructions {
                    let chunk = KnowledgeFile::new(&file.path, &file.text);
                    file.chunk = Some(chunk.id());
                    file.sha256 = Some(chunk.sha256.clone());
                    chunks.push(chunk);
                }
            }
        }
        Ok(FromFiles {
            instructions,
            chunks,
            git,
            skills,
            agents,
            skipped,
        })
    }

    /// Records them on `context` (with the `skill` tool when there are
    /// skills); answers the custom agents, the chunks to commit with it,
    /// and every file skipped, with why.
    pub fn record(
        self,
        context: &mut ContextBody,
    ) -> (Vec<AgentDef>, Vec<KnowledgeFile>, Vec<String>) {
        context.instructions = self.instructions;
        context.git = self.git;
        if !self.skills.is_empty() {
            context.own_tools.push(crate::sources::skills::definition());
        }
        context.skills = self.skills;
        context.agents = self.agents.iter().map(AgentDef::index).collect();
        (self.agents, self.chunks, self.skipped)
    }
}
