//! Programs: the typed body of a program chunk ([`ProgramBody`]), the
//! definition of a built-in tool program ([`ProgramDef`]) and the table
//! entry that joins a definition to its code ([`Builtin`]); and the helper
//! every Rust program uses ([`Program`], [`serve`]): start under the
//! engine, read its typed input, send progress, commit its result.
//!
//! A program's result is one `engine/output` chunk on its own process:
//! `text` for the model, `data` for machines, `is_error` when the request
//! did not succeed. A program that committed a result — an error result
//! included — exits 0; a failed process means it could not answer at all.

use crate::client::{Client, ClientError, Events};
use crate::wire::{Boundary, Capabilities};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeOpts};

/// The default timeout of a tool run.
pub const TOOL_TIMEOUT_MS: u64 = 30_000;

/// Where a program runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// A process the engine spawns and contains.
    #[default]
    Vm,
    /// A page in a browser tile (`hc serve --http`), speaking the protocol
    /// over a WebSocket.
    Webview,
    /// A long-lived process, started once per engine when first needed,
    /// that serves the runs of programs naming it in `served_by`.
    Service,
}

fn yes() -> bool {
    true
}

fn no_roots() -> Boundary {
    Boundary::Roots(Vec::new())
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn null_as_no_roots<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Boundary, D::Error> {
    Ok(Option::<Boundary>::deserialize(d)?.unwrap_or_else(no_roots))
}

/// The body of a program chunk (an instance of `engine/program`), typed.
/// Unknown fields are kept out of the way, not refused: a program chunk is
/// also a place for notes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramBody {
    /// `builtin:NAME`, a path (relative to the project root, or absolute),
    /// or a command found on `PATH` (none for a webview program).
    #[serde(default)]
    pub executable: String,
    /// Arguments passed to the executable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `vm` (the default), `webview` or `service`.
    #[serde(default)]
    pub runtime: Runtime,
    /// A webview program's page: an HTML file relative to the project
    /// root, or `builtin:NAME` (one `hc` carries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// What it does: for people, and the tool description a model reads.
    #[serde(default)]
    pub text: String,
    /// The type of its argument chunk (`input/NAME`), whose `body.schema`
    /// is the tool's input schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_type: Option<String>,
    /// What it may touch on the machine when contained.
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: Capabilities,
    /// Its intrinsic boundary; missing (or null) means `[]` (its own tree only).
    #[serde(default = "no_roots", deserialize_with = "null_as_no_roots")]
    pub boundary: Boundary,
    /// Its default run timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Runs of it may overlap (it changes nothing another run reads).
    #[serde(default)]
    pub concurrency_safe: bool,
    /// It changes nothing outside its own process.
    #[serde(default)]
    pub read_only: bool,
    /// Whether a model sees it as a tool (default true).
    #[serde(default = "yes")]
    pub tool: bool,
    /// The service program that carries out its runs (none: it runs as a
    /// process of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_by: Option<String>,
    /// Where its input names the files it writes (a JSON pointer to a path,
    /// or to a list of paths): its file effects are looked for there
    /// alone; without it, everywhere in the project it may write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<String>,
}

impl ProgramBody {
    /// Reads a program chunk's body, with a message that names the program.
    pub fn parse(name: &str, body: &Value) -> Result<ProgramBody, String> {
        serde_json::from_value(body.clone())
            .map_err(|e| format!("program `{name}` has a malformed body: {e}"))
    }

    /// Whether models are offered it as a tool: a `vm` program not marked
    /// `tool: false`.
    pub fn offered_as_tool(&self) -> bool {
        self.tool && self.runtime == Runtime::Vm
    }
}

/// A built-in tool program's definition: its program chunk `program/NAME`
/// and its argument type `input/NAME`.
#[derive(Clone, Debug)]
pub struct ProgramDef {
    /// The program's name (`read`); its id is `program/NAME`.
    pub name: &'static str,
    /// What it does, when to use it, its limits — written for a model.
    pub text: &'static str,
    /// The JSON Schema object of its input.
    pub schema: Value,
    /// What it may touch.
    pub capabilities: Capabilities,
    /// Default run timeout.
    pub timeout_ms: u64,
    /// Runs may overlap.
    pub concurrency_safe: bool,
    /// Changes nothing.
    pub read_only: bool,
    /// A model sees it.
    pub tool: bool,
}

impl ProgramDef {
    /// The program chunk's id.
    pub fn id(&self) -> String {
        format!("program/{}", self.name)
    }

    /// The argument type's id.
    pub fn input_type(&self) -> String {
        format!("input/{}", self.name)
    }

    /// The typed body of its program chunk.
    pub fn body(&self) -> ProgramBody {
        ProgramBody {
            executable: format!("builtin:{}", self.name),
            args: Vec::new(),
            runtime: Runtime::Vm,
            entry: None,
            text: self.text.to_owned(),
            input_type: Some(self.input_type()),
            capabilities: self.capabilities.clone(),
            boundary: no_roots(),
            timeout_ms: Some(self.timeout_ms),
            concurrency_safe: self.concurrency_safe,
            read_only: self.read_only,
            tool: self.tool,
            served_by: None,
            writes: None,
        }
    }

    /// The two chunks: `program/NAME` (instance on `engine/program`) and
    /// `input/NAME` (relates on the program, its spec's `required`
    /// mirroring the schema's), in declaration order.
    pub fn chunks(&self) -> Vec<ChunkDecl> {
        self.chunks_with(self.body())
    }

    /// Its chunks, its input naming the files it writes at `pointer`
    /// (`ProgramBody::writes`).
    pub fn chunks_writing(&self, pointer: &str) -> Vec<ChunkDecl> {
        let mut body = self.body();
        body.writes = Some(pointer.to_owned());
        self.chunks_with(body)
    }

    /// Its chunks, its program chunk's body `body`.
    pub fn chunks_with(&self, body: ProgramBody) -> Vec<ChunkDecl> {
        let (program, input) = (self.id(), self.input_type());
        let required = self
            .schema
            .get("required")
            .cloned()
            .unwrap_or_else(|| json!([]));
        let body = serde_json::to_value(body).unwrap_or_default();
        vec![
            ChunkDecl::with_id(&program)
                .name(self.name)
                .spec(json!({"propagate": true, "accepts": [input]}))
                .body(body)
                .on(NewPlacement::instance("engine/program")),
            ChunkDecl::with_id(&input)
                .name(input.clone())
                .spec(json!({"required": required}))
                .body(json!({
                    "text": format!("The input of the {} program.", self.name),
                    "schema": self.schema,
                }))
                .on(NewPlacement::relates(&program)),
        ]
    }
}

/// What a built-in's entry point returns.
pub type ProgramFuture = Pin<Box<dyn Future<Output = Result<(), ProgramError>>>>;

/// One row of a table of built-in programs: its chunks and its code.
pub struct Builtin {
    /// The name `builtin:NAME` and `hc program NAME` use.
    pub name: &'static str,
    /// The chunks that define it (committed by `hc init`).
    pub chunks: fn() -> Vec<ChunkDecl>,
    /// Runs it on this process's stdio, to completion.
    pub main: fn() -> ProgramFuture,
}

/// Why a program could not answer at all (its process fails).
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// Not started by the engine.
    #[error(
        "this is a hermitcrab program: the engine runs it (with HC_PROCESS_ID set), not a person"
    )]
    NotUnderEngine,
    /// The engine refused a request, or the connection failed.
    #[error("{0}")]
    Engine(#[from] ClientError),
    /// Something else that leaves no answer possible.
    #[error("{0}")]
    Other(String),
    /// The program answered and ends with this exit code (non-zero: its
    /// process is `failed`), saying why.
    #[error("{1}")]
    Exit(i32, String),
}

/// A program's answer: `engine/output` with `text`, `data`, `is_error`.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// What the model reads.
    pub text: String,
    /// The same facts for machines.
    pub data: Value,
    /// The request did not succeed.
    pub is_error: bool,
}

impl Output {
    /// A successful answer.
    pub fn ok(text: impl Into<String>, data: Value) -> Output {
        Output {
            text: text.into(),
            data,
            is_error: false,
        }
    }

    /// An error answer: the request could not be carried out, and the text
    /// says why and what to do instead.
    pub fn error(text: impl Into<String>) -> Output {
        Output {
            text: text.into(),
            data: Value::Null,
            is_error: true,
        }
    }

    /// The same, with data.
    pub fn error_with(text: impl Into<String>, data: Value) -> Output {
        Output {
            text: text.into(),
            data,
            is_error: true,
        }
    }

    /// Reads an `engine/output` body (what is missing is empty).
    pub fn parse(body: &Value) -> Output {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Wire {
            text: String,
            data: Value,
            is_error: bool,
        }
        let wire = Wire::deserialize(body).unwrap_or_default();
        Output {
            text: wire.text,
            data: wire.data,
            is_error: wire.is_error,
        }
    }

    /// The body of its `engine/output` chunk.
    pub fn body(&self) -> Value {
        let mut body = json!({"text": self.text, "is_error": self.is_error});
        if !self.data.is_null() {
            body["data"] = self.data.clone();
        }
        body
    }
}

/// A program running under the engine: its connection, its process id and
/// the project root.
pub struct Program {
    client: Client,
    events: Option<Events>,
    process: String,
    root: PathBuf,
}

impl Program {
    /// Connects on stdio, as the engine started this program.
    pub fn connect() -> Result<Program, ProgramError> {
        let Some(process) = crate::env::process_id() else {
            return Err(ProgramError::NotUnderEngine);
        };
        let root = std::env::var_os(crate::env::PROJECT_ROOT)
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        let (client, events) = Client::from_stdio();
        Ok(Program {
            client,
            events: Some(events),
            process,
            root,
        })
    }

    /// Its process chunk id.
    pub fn id(&self) -> &str {
        &self.process
    }

    /// The project root (`HC_PROJECT_ROOT`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The connection, for anything beyond the helper.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The connection's events (once).
    pub fn take_events(&mut self) -> Option<Events> {
        self.events.take()
    }

    /// The body of its argument chunk typed `input_type`, or `None`.
    pub async fn input_value(&self, input_type: &str) -> Result<Option<Value>, ClientError> {
        let process = self
            .client
            .scope(&[self.process.as_str()], ScopeOpts::default())
            .await?;
        Ok(process
            .chunks
            .iter()
            .find(|c| c.is_on(input_type, PlacementType::Instance))
            .map(|c| c.body_value()))
    }

    /// Commits its result onto its own process.
    pub async fn answer(&self, output: &Output) -> Result<(), ClientError> {
        let chunk = ChunkDecl::generated()
            .body(output.body())
            .on(NewPlacement::instance(&self.process))
            .on(NewPlacement::instance("engine/output"));
        self.client.commit(Declaration::of(vec![chunk])).await?;
        Ok(())
    }

    /// Ends its run with its result: the result and the end in one commit
    /// (the process may exit any time after).
    pub async fn finish(&self, output: &Output) -> Result<(), ClientError> {
        self.client.finish_with(output.body()).await
    }

    /// Sends progress to live subscribers (never stored), without waiting
    /// for the engine's answer: progress is for display, and a program's
    /// last progress would otherwise cost a round trip before its result.
    pub fn progress(&self, data: Value) {
        self.client.notify_now(data);
    }
}

/// Runs a typed program: connects, reads its `input_type` argument, reads
/// it as `I` (whose fields, types and enums are its schema's — the agent
/// checked the schema itself before the run; checking it again here would
/// cost a JSON Schema compiler's start-up in every run), runs `work`, and
/// commits the result. Input that does not fit is answered with an error
/// result naming the field (the program still completes): only a lost
/// engine fails the process.
pub async fn serve<I, F>(input_type: &str, work: F) -> Result<(), ProgramError>
where
    I: DeserializeOwned,
    F: AsyncFnOnce(&Program, I) -> Output,
{
    let program = Program::connect()?;
    let output = match program.input_value(input_type).await? {
        None => Output::error(format!(
            "no `{input_type}` argument: this program takes one chunk typed `{input_type}`"
        )),
        Some(value) => match serde_path_to_error::deserialize::<_, I>(value) {
            Err(why) if why.path().iter().next().is_none() => {
                Output::error(format!("invalid input: {}", why.inner()))
            }
            Err(why) => Output::error(format!("invalid input: `{}`: {}", why.path(), why.inner())),
            Ok(input) => work(&program, input).await,
        },
    };
    // (a lever: the result committed apart from the end, as before)
    #[cfg(feature = "bench")]
    if std::env::var_os(crate::env::SPLIT_FINISH).is_some() {
        program.answer(&output).await?;
        return Ok(());
    }
    program.finish(&output).await?;
    Ok(())
}
