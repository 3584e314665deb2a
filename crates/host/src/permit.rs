//! A program a host runs directly for a person — the page's form, a raw
//! `run` on the page's socket, a command file's `` !`cmd` `` line — goes
//! through the person's permission rules as a tool call does: a deny rule
//! refuses it, and what would ask is the person's to allow (decision 19:
//! no page user or command gets more than the rules give).

use agent::AgentConfig;
use agent::permissions::{Call, Decision, Permissions};
use std::path::Path;

/// What the rules of `config` say of a direct run of `program` (`read_only`
/// as its declaration says) with `input`, in the project at `root`.
pub fn decide(
    config: &AgentConfig,
    root: &Path,
    program: &str,
    input: &serde_json::Value,
    read_only: bool,
) -> anyhow::Result<Decision> {
    let permissions = Permissions::new(
        config.permission_mode,
        &config.allow,
        &config.deny,
        &config.ask,
    )
    .map_err(|e| anyhow::anyhow!(e))?
    .with_dirs(root, &config.add_dirs);
    let call = Call {
        program,
        input,
        root,
        read_only,
    };
    Ok(permissions.decide(&call))
}

/// [`decide`] for a run the person asks for themselves (the page's form,
/// the owner's own frame): what would ask is theirs to allow, and they
/// asked; a deny rule (or plan mode) refuses it, saying why.
pub fn asked_by_person(
    config: &AgentConfig,
    root: &Path,
    program: &str,
    input: &serde_json::Value,
    read_only: bool,
) -> anyhow::Result<()> {
    match decide(config, root, program, input, read_only)? {
        Decision::Allow | Decision::Ask(_) => Ok(()),
        Decision::Deny(why) => anyhow::bail!("`{program}` is refused by your rules: {why}"),
    }
}
