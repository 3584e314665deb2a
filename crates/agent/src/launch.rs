//! How a host starts the agent: a session to run on, the scopes the run
//! pins, and the run itself — its prompt and context event placed on the
//! session in the run's own commit, its resolved configuration, its
//! boundaries. Pure: each answers the declarations and arguments a host
//! commits and runs, through the engine or the protocol alike.
//!
//! ```
//! use agent::{AgentConfig, launch};
//! let (session, make) = launch::new_session("fix the failing test\nin src/");
//! assert_eq!(make.chunks[0].body.as_ref().unwrap()["title"], "fix the failing test");
//! let config = AgentConfig { model: "claude-sonnet-4-5".into(), ..AgentConfig::default() };
//! let run = launch::Launch { session: &session, prompt: "fix it", images: &[], config: &config, pins: &[], uuid: None };
//! let (before, args) = run.plan();
//! assert!(before.is_none()); // nothing pinned: the context event is an argument
//! assert_eq!(args.session.as_deref(), Some(session.as_str()));
//! ```

use crate::config::AgentConfig;
use crate::contract::{
    Body, ContextBody, KNOWLEDGE_FILE, PROJECT_MEMORY, Prompt, SessionBody, USER_MEMORY,
};
use protocol::{Boundary, RunArgs};
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementDecl, PlacementType, ScopeResult};

/// How long a session's title may be, in characters.
const TITLE_CHARS: usize = 80;

/// A new session for `prompt`: its id, and the declaration that makes it
/// (its title is the prompt's first line, cut; its creation time).
pub fn new_session(prompt: &str) -> (String, Declaration) {
    new_named_session(prompt, None)
}

/// [`new_session`], named by a program (`--session-id`) when `name` is given.
pub fn new_named_session(prompt: &str, name: Option<&str>) -> (String, Declaration) {
    let id = new_session_id();
    let declaration = session_declaration(&id, prompt, name);
    (id, declaration)
}

/// The declaration making session `id` (one made by [`new_session_id`]
/// ahead, as an editor's `session/new` is answered before its first
/// prompt), titled by `prompt`.
pub fn session_declaration(id: &str, prompt: &str, name: Option<&str>) -> Declaration {
    declaration_of(id, prompt, name.map(str::to_owned), None)
}

/// A new session replaying `of` (`hc replay`), titled by `prompt`: its
/// id and the declaration making it.
pub fn replay_session(prompt: &str, of: &str) -> (String, Declaration) {
    let id = new_session_id();
    let declaration = declaration_of(&id, prompt, None, Some(of.to_owned()));
    (id, declaration)
}

/// Session `id`'s declaration: its body, as [`SessionBody`] reads it.
fn declaration_of(
    id: &str,
    prompt: &str,
    session_id: Option<String>,
    replay_of: Option<String>,
) -> Declaration {
    let title = title(prompt);
    let body = SessionBody {
        title: title.clone(),
        created: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        session_id,
        forked_from: None,
        replay_of,
    };
    let chunk = ChunkDecl::with_id(id)
        .name(title)
        .body(serde_json::to_value(&body).unwrap_or_default())
        .on(NewPlacement::instance(SessionBody::TYPE));
    Declaration::of(vec![chunk])
}

/// A new session's id, for [`session_declaration`].
pub fn new_session_id() -> String {
    substrate::ids::new_id("s")
}

/// A session's title: the prompt's first line that is not blank, cut to
/// [`TITLE_CHARS`] (the rest of the prompt is the prompt's, not a sign of
/// a cut title).
pub fn title(prompt: &str) -> String {
    let first = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut out: String = first.chars().take(TITLE_CHARS).collect();
    if first.chars().count() > TITLE_CHARS {
        out.push('…');
    }
    out
}

/// The scopes a run pins into the agent's knowledge: culture first, when
/// there is any (`culture`: its read, if it could be read — an empty
/// archetype pinned on every run would only grow a placement a run), then
/// the `given` ids, in order, once each. An id that `exists` does not know
/// is refused, naming it.
pub fn pins_of(
    culture: Option<&ScopeResult>,
    given: &[String],
    exists: impl Fn(&str) -> bool,
) -> Result<Vec<String>, String> {
    let mut pinned: Vec<String> = Vec::new();
    let has_culture = culture.is_some_and(|c| {
        !c.chunks.is_empty() || c.scopes.first().is_some_and(|s| has_text(&s.body_value()))
    });
    if has_culture {
        pinned.push("culture".into());
    }
    for id in given {
        if !exists(id) {
            return Err(format!(
                "--context {id}: no such chunk in this project's substrate"
            ));
        }
        if !pinned.contains(id) {
            pinned.push(id.clone());
        }
    }
    Ok(pinned)
}

fn has_text(body: &serde_json::Value) -> bool {
    body.get("text").is_some_and(serde_json::Value::is_string)
}

/// A run of the agent a host starts on a session.
pub struct Launch<'a> {
    /// The session.
    pub session: &'a str,
    /// The prompt.
    pub prompt: &'a str,
    /// Images sent with it.
    pub images: &'a [crate::contract::PromptImage],
    /// The resolved configuration.
    pub config: &'a AgentConfig,
    /// The scopes it pins (as [`pins_of`] gives them).
    pub pins: &'a [String],
    /// The id a driving program gave the prompt (the SDK's `uuid`).
    pub uuid: Option<&'a str>,
}

impl Launch<'_> {
    /// What the host commits first — when the run pins scopes, the
    /// context event relating them — and the run's arguments: the prompt
    /// and the context event on the session, the configuration; read the
    /// session, the programs, the pins, the files requests were given and
    /// the memory; write the session, those files and (when it is on) the
    /// memory.
    pub fn plan(&self) -> (Option<Declaration>, RunArgs) {
        let (before, context) = self.context_event();
        let mut read = vec![
            self.session.to_owned(),
            "engine/program".to_owned(),
            protocol::origin::ORIGIN.to_owned(),
        ];
        read.extend(self.pins.iter().cloned());
        // a replay reads the session it replays (its answers, its context)
        read.extend(self.config.replay.iter().cloned());
        let mut write = vec![self.session.to_owned(), KNOWLEDGE_FILE.to_owned()];
        read.push(KNOWLEDGE_FILE.to_owned());
        if self.config.memory {
            for scope in [PROJECT_MEMORY, USER_MEMORY] {
                read.push(scope.to_owned());
                write.push(scope.to_owned());
            }
        }
        // the identity's blocks (their scope made by the host, first)
        let mut before = before;
        if self.config.has_blocks() {
            let identity = self.config.identity();
            read.push(crate::blocks::scope_of(identity));
            write.push(crate::blocks::scope_of(identity));
            read.push(crate::blocks::store::CONSTITUTION.to_owned());
            let declaration = before.get_or_insert_with(Declaration::default);
            declaration
                .chunks
                .insert(0, crate::blocks::store::scope_chunk(identity));
        }
        let prompt = Prompt {
            text: self.prompt.to_owned(),
            from: None,
            images: self.images.to_vec(),
            message: None,
            uuid: self.uuid.map(str::to_owned),
        };
        let args = RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(serde_json::to_value(&prompt).unwrap_or_default())
                    .on(NewPlacement::instance(Prompt::TYPE))
                    .on(NewPlacement::instance(self.session)),
                context,
                ChunkDecl::generated()
                    .body(serde_json::to_value(self.config).unwrap_or_default())
                    .on(NewPlacement::instance("agent-config")),
            ],
            read_boundary: Some(Boundary::Roots(read)),
            write_boundary: Some(Boundary::Roots(write)),
            session: Some(self.session.to_owned()),
            ..RunArgs::default()
        };
        (before, args)
    }

    /// The run's `context` event (relating the pins, committed first when
    /// there are any): what to commit first, and the argument.
    fn context_event(&self) -> (Option<Declaration>, ChunkDecl) {
        let event = |id: Option<&str>| {
            id.map_or_else(ChunkDecl::generated, ChunkDecl::with_id)
                .body(serde_json::json!({}))
                .on(NewPlacement::instance(ContextBody::TYPE))
                .on(NewPlacement::instance(self.session))
        };
        if self.pins.is_empty() {
            return (None, event(None));
        }
        let id = substrate::ids::new_id("c");
        let relates = self
            .pins
            .iter()
            .map(|p| PlacementDecl {
                chunk: p.clone(),
                scope: id.clone(),
                kind: PlacementType::Relates,
                seq: None,
            })
            .collect();
        let declaration = Declaration {
            chunks: vec![event(Some(&id))],
            placements: relates,
            ..Declaration::default()
        };
        (Some(declaration), ChunkDecl::with_id(id))
    }
}
