//! The agent's contract with its hosts: every body the agent writes on a
//! session (and every answer a host writes back), the totals on its
//! process, the notices it streams — one set of types, which the agent
//! writes through and every host reads through. [`SessionItem::of`] says
//! what a chunk on a session is; a host matches it exhaustively, so a new
//! kind of item is a compile error in every host, never a silent drop.

mod blocks;
mod bodies;
mod context;
mod hooks;
mod memory;
mod notice;
mod totals;

pub use blocks::{BlockSave, LlmCall, LlmPurpose};
pub use bodies::{
    Answer, Body, CallTiming, Choice, Compaction, Forked, Interrupt, Message, PLAN_ACCEPT_EDITS,
    PLAN_APPROVE, PermissionDecision, PermissionRequest, Plan, Prompt, PromptImage, PromptSource,
    Sender, SessionBody, Todo, TodoItem, TodoStatus, ToolCall, ToolResult, UserAnswer,
    UserQuestion,
};
pub use context::{AgentIndex, ContextBody, GitFacts, Instructions, ShellRecord, SkillIndex};
pub use hooks::{HookAnswer, HookCallback, HookOutput};
pub use memory::{
    KNOWLEDGE_FILE, KnowledgeFile, MemoryEntry, MemoryScope, PROJECT_MEMORY, USER_MEMORY, now,
    sha256_hex,
};
pub use notice::{Notice, SAID_BYTES};
pub use totals::{
    ChildTotals, Denial, ModelTotals, RunBody, RunOutcome, RunStop, RunTotals, Tokens, Work,
};

use serde::de::DeserializeOwned;
use serde_json::Value;
use substrate::{ChunkItem, PlacementType};

/// The process type: a run placed on a session (an agent's, or a program
/// a host ran there).
pub const PROCESS: &str = "engine/process";

/// A body ready to be committed on a session: its type and its JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The type it is placed instance on.
    pub kind: &'static str,
    /// The body.
    pub body: Value,
}

impl Entry {
    /// The entry of `body`.
    pub fn of<B: Body>(body: &B) -> Entry {
        Entry {
            kind: B::TYPE,
            body: serde_json::to_value(body).unwrap_or(Value::Null),
        }
    }

    /// What it is, read back exactly as a chunk of the session would be.
    pub fn item(&self) -> SessionItem {
        SessionItem::parse(self.kind, &self.body)
    }
}

/// A chunk on a session: its id and what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The chunk's id.
    pub id: String,
    /// What it is.
    pub item: SessionItem,
}

impl Member {
    /// The member `chunk` is.
    pub fn of(chunk: &ChunkItem) -> Member {
        Member {
            id: chunk.id.clone(),
            item: SessionItem::of(chunk),
        }
    }
}

impl AsRef<SessionItem> for Member {
    fn as_ref(&self) -> &SessionItem {
        &self.item
    }
}

impl AsRef<SessionItem> for SessionItem {
    fn as_ref(&self) -> &SessionItem {
        self
    }
}

/// What a chunk on a session is.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionItem {
    /// A task or message.
    Prompt(Prompt),
    /// A model reply.
    Answer(Box<Answer>),
    /// A call the model made.
    ToolCall(ToolCall),
    /// What a call came to.
    ToolResult(ToolResult),
    /// A context event: the agent's (`Some`), or a host's placeholder.
    Context(Option<Box<ContextBody>>),
    /// A summary the next calls start from.
    Compaction(Box<Compaction>),
    /// The agent asks whether a call may run.
    PermissionRequest(PermissionRequest),
    /// A host's answer to that.
    PermissionDecision(PermissionDecision),
    /// The agent asks the person a question.
    UserQuestion(UserQuestion),
    /// A host's answer to that.
    UserAnswer(UserAnswer),
    /// A host asked the run to stop.
    Interrupt(Interrupt),
    /// Something sent to the session from outside it.
    Message(Message),
    /// The agent's plan.
    Todo(Todo),
    /// A plan mode run's plan, put to the person (`exit_plan`).
    Plan(Plan),
    /// The agent asks a host to run a registered hook callback.
    HookCallback(HookCallback),
    /// A host's answer to that.
    HookAnswer(HookAnswer),
    /// A model call beside the conversation (`call_llm`, a compression).
    LlmCall(Box<LlmCall>),
    /// An entry the kernel saved to a block.
    BlockSave(BlockSave),
    /// A process on the session (an agent's run, its totals on it).
    Run(Box<RunBody>),
    /// A chunk of one of these types whose body does not read as it.
    Unreadable {
        /// Its type.
        kind: &'static str,
        /// What is wrong with it.
        error: String,
    },
    /// A chunk of no type of the agent's.
    Other,
}

/// The types a session item may be, in the order they are looked for.
const KINDS: [&str; 19] = [
    Prompt::TYPE,
    Answer::TYPE,
    ToolCall::TYPE,
    ToolResult::TYPE,
    ContextBody::TYPE,
    Compaction::TYPE,
    PermissionRequest::TYPE,
    PermissionDecision::TYPE,
    UserQuestion::TYPE,
    UserAnswer::TYPE,
    Interrupt::TYPE,
    Message::TYPE,
    Todo::TYPE,
    HookCallback::TYPE,
    HookAnswer::TYPE,
    LlmCall::TYPE,
    BlockSave::TYPE,
    Plan::TYPE,
    PROCESS,
];

impl SessionItem {
    /// What `item` is: its type (the first of the agent's it is an
    /// instance of), its body read as that type.
    pub fn of(item: &ChunkItem) -> SessionItem {
        let Some(kind) = kind_of(item) else {
            return SessionItem::Other;
        };
        read(kind, &Text(item.body.as_ref().map_or("{}", |b| b.as_str())))
    }

    /// What a body of type `kind` is (the agent, for what it just wrote).
    pub fn parse(kind: &str, body: &Value) -> SessionItem {
        match KINDS.iter().find(|k| **k == kind) {
            Some(kind) => read(kind, &Val(body)),
            None => SessionItem::Other,
        }
    }

    /// The item's type.
    pub fn kind(&self) -> Option<&'static str> {
        Some(match self {
            SessionItem::Prompt(_) => Prompt::TYPE,
            SessionItem::Answer(_) => Answer::TYPE,
            SessionItem::ToolCall(_) => ToolCall::TYPE,
            SessionItem::ToolResult(_) => ToolResult::TYPE,
            SessionItem::Context(_) => ContextBody::TYPE,
            SessionItem::Compaction(_) => Compaction::TYPE,
            SessionItem::PermissionRequest(_) => PermissionRequest::TYPE,
            SessionItem::PermissionDecision(_) => PermissionDecision::TYPE,
            SessionItem::UserQuestion(_) => UserQuestion::TYPE,
            SessionItem::UserAnswer(_) => UserAnswer::TYPE,
            SessionItem::Interrupt(_) => Interrupt::TYPE,
            SessionItem::Message(_) => Message::TYPE,
            SessionItem::Todo(_) => Todo::TYPE,
            SessionItem::Plan(_) => Plan::TYPE,
            SessionItem::HookCallback(_) => HookCallback::TYPE,
            SessionItem::HookAnswer(_) => HookAnswer::TYPE,
            SessionItem::LlmCall(_) => LlmCall::TYPE,
            SessionItem::BlockSave(_) => BlockSave::TYPE,
            SessionItem::Run(_) => PROCESS,
            SessionItem::Unreadable { kind, .. } => kind,
            SessionItem::Other => return None,
        })
    }

    /// Whether it records a model call of its session: an answer that
    /// numbers its call, a compaction whose summary call is recorded, or
    /// a call beside the conversation.
    pub fn is_call(&self) -> bool {
        match self {
            SessionItem::Answer(a) => a.call.is_some(),
            SessionItem::Compaction(c) => c.as_of.is_some(),
            SessionItem::LlmCall(c) => !c.process.is_empty(),
            _ => false,
        }
    }
}

/// The first of the agent's types `item` is an instance of.
pub fn kind_of(item: &ChunkItem) -> Option<&'static str> {
    KINDS
        .iter()
        .find(|k| item.is_on(k, PlacementType::Instance))
        .copied()
}

/// A body, as text or as a value.
trait Source {
    fn get<T: DeserializeOwned>(&self) -> Result<T, String>;
}

struct Text<'a>(&'a str);
struct Val<'a>(&'a Value);

impl Source for Text<'_> {
    fn get<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_str(self.0).map_err(|e| e.to_string())
    }
}

impl Source for Val<'_> {
    fn get<T: DeserializeOwned>(&self) -> Result<T, String> {
        T::deserialize(self.0).map_err(|e| e.to_string())
    }
}

/// The body of a `kind` chunk, read; `Unreadable` when it does not read.
fn read(kind: &'static str, source: &impl Source) -> SessionItem {
    read_as(kind, source).unwrap_or_else(|error| SessionItem::Unreadable { kind, error })
}

/// The one table of type → variant.
fn read_as(kind: &str, source: &impl Source) -> Result<SessionItem, String> {
    Ok(match kind {
        Prompt::TYPE => SessionItem::Prompt(source.get()?),
        Answer::TYPE => SessionItem::Answer(Box::new(source.get()?)),
        ToolCall::TYPE => SessionItem::ToolCall(source.get()?),
        ToolResult::TYPE => SessionItem::ToolResult(source.get()?),
        ContextBody::TYPE => {
            let body: ContextBody = source.get()?;
            SessionItem::Context(body.is_written().then(|| Box::new(body)))
        }
        Compaction::TYPE => SessionItem::Compaction(Box::new(source.get()?)),
        PermissionRequest::TYPE => SessionItem::PermissionRequest(source.get()?),
        PermissionDecision::TYPE => SessionItem::PermissionDecision(source.get()?),
        UserQuestion::TYPE => SessionItem::UserQuestion(source.get()?),
        UserAnswer::TYPE => SessionItem::UserAnswer(source.get()?),
        Interrupt::TYPE => SessionItem::Interrupt(source.get()?),
        Message::TYPE => SessionItem::Message(source.get()?),
        HookCallback::TYPE => SessionItem::HookCallback(source.get()?),
        HookAnswer::TYPE => SessionItem::HookAnswer(source.get()?),
        LlmCall::TYPE => SessionItem::LlmCall(Box::new(source.get()?)),
        BlockSave::TYPE => SessionItem::BlockSave(source.get()?),
        Todo::TYPE => SessionItem::Todo(source.get()?),
        Plan::TYPE => SessionItem::Plan(source.get()?),
        PROCESS => SessionItem::Run(Box::new(source.get()?)),
        _ => SessionItem::Other,
    })
}

/// The argument chunks a read of a process lists (its body's
/// `arguments`): the chunks its run was started with, and no other placed
/// on it since.
pub fn arguments_of(read: &substrate::ScopeResult) -> Vec<String> {
    read.scopes
        .first()
        .map(|p| protocol::process::ProcessBody::parse(&p.body_value()).arguments)
        .unwrap_or_default()
}
