//! # programs
//!
//! hermitcrab's built-in programs. Each is an ordinary protocol program —
//! it learns its arguments with `scope([$HC_PROCESS_ID])` and answers by
//! committing `engine/output` chunks onto its own process — run as
//! `hc program NAME` (a program chunk whose executable is `builtin:NAME`).
//! [`definitions`] are their program chunks, committed by `hc init`.
//!
//! Invariant: a built-in reaches the substrate only through the protocol,
//! exactly as a program in another language would.

mod echo;

use protocol::ClientError;
use substrate::bootstrap::ProgramDef;

/// Every built-in program's definition.
pub fn definitions() -> Vec<ProgramDef> {
    vec![echo::definition()]
}

/// The names of the built-ins, for messages.
pub fn names() -> Vec<String> {
    definitions().into_iter().map(|d| d.name).collect()
}

/// Why a built-in could not do its work.
#[derive(Debug)]
pub enum ProgramError {
    /// Not started by the engine.
    NotUnderEngine,
    /// No built-in has that name.
    Unknown(String),
    /// The engine refused a request, or the connection failed.
    Engine(ClientError),
    /// The arguments were not what the program accepts.
    BadInput(String),
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProgramError::NotUnderEngine => write!(
                f,
                "this is a hermitcrab program: the engine runs it (with HC_PROCESS_ID set), not a person"
            ),
            ProgramError::Unknown(name) => write!(
                f,
                "no built-in program `{name}`; the built-ins are: {}",
                names().join(", ")
            ),
            ProgramError::Engine(e) => write!(f, "{e}"),
            ProgramError::BadInput(why) => write!(f, "bad input: {why}"),
        }
    }
}

impl std::error::Error for ProgramError {}

impl From<ClientError> for ProgramError {
    fn from(e: ClientError) -> ProgramError {
        ProgramError::Engine(e)
    }
}

/// Runs the built-in `name` on this process's stdio, to completion.
pub async fn run(name: &str) -> Result<(), ProgramError> {
    if !names().iter().any(|n| n == name) {
        return Err(ProgramError::Unknown(name.to_owned()));
    }
    let Some(me) = protocol::env::process_id() else {
        return Err(ProgramError::NotUnderEngine);
    };
    match name {
        "echo" => echo::run(&me).await,
        other => Err(ProgramError::Unknown(other.to_owned())),
    }
}
