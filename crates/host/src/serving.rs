//! Whose queued runs a worker takes, and as whom it runs them (decision
//! 19, principals). A worker serves named people — its own person, and
//! those `hc worker --for` names (`*`: anyone) — and runs a run another
//! person asked for under its own person's settings, never wider than the
//! asker's ([`agent::AgentConfig::within`]); such a run asking to work in
//! the checkout itself (`--no-worktree`) or in `bypass` mode is left for
//! the asker's own worker. Who asked is the database's word on a shared
//! store (the role that queued it), never what the run's body claims.

use agent::{AgentConfig, PermissionMode};
use protocol::process::ProcessBody;
use substrate::{ChunkDecl, Declaration, PlacementType, Substrate};

/// Whom a worker serves, and what it runs another person's runs within.
#[derive(Clone, Debug, Default)]
pub struct Serving {
    /// The people whose runs it takes besides its own person's (`--for`;
    /// `*`: anyone's).
    pub people: Vec<String>,
    /// Its own person's settings (none: it takes no one else's runs).
    pub own: Option<AgentConfig>,
}

impl Serving {
    /// Whether the person `asker` is served here (`me`: the worker's).
    fn serves(&self, me: &str, asker: &str) -> bool {
        asker == me || self.people.iter().any(|p| p == asker || p == "*")
    }

    /// Why this worker does not take queued run `id` (`body`), if so.
    pub(crate) fn refuses(&self, db: &Substrate, id: &str, body: &ProcessBody) -> Option<String> {
        let me = db.person();
        let asker = asker(db, id, body);
        if asker == me {
            return None;
        }
        if !self.serves(&me, &asker) || self.own.is_none() {
            return Some(format!(
                "asked by {asker}; this worker serves {me} (hc worker --for {asker} takes their runs)"
            ));
        }
        let worktree = body.placement.as_ref().and_then(|p| p.worktree.as_ref());
        if worktree.is_none() {
            return Some(format!(
                "asked by {asker} to work in the checkout itself (--no-worktree): only their own \
                 worker runs that"
            ));
        }
        let config = queued_config(db, body).map(|(_, c)| c);
        if config.is_some_and(|c| c.permission_mode == PermissionMode::Bypass) {
            return Some(format!(
                "asked by {asker} in bypass mode: only their own worker runs that"
            ));
        }
        None
    }

    /// Before queued run `id` (`body`) is claimed: when another person
    /// asked for it, its configuration made no wider than this worker's
    /// person's, and who asked recorded as the store says. Refused
    /// (nothing written) once it no longer waits.
    pub(crate) fn restate(
        &self,
        db: &Substrate,
        id: &str,
        body: &ProcessBody,
    ) -> anyhow::Result<()> {
        let (me, asker) = (db.person(), asker(db, id, body));
        let Some(own) = self.own.as_ref().filter(|_| asker != me) else {
            return Ok(());
        };
        let mut chunks = Vec::new();
        if let Some((config_id, config)) = queued_config(db, body) {
            let within = serde_json::to_value(config.within(own))?;
            chunks.push(ChunkDecl::with_id(config_id).body(within));
        }
        if let Some(mut placement) = body.placement.clone() {
            placement.asked_by = Some(asker);
            let asked = serde_json::json!({ "placement": placement });
            chunks.push(ChunkDecl::with_id(id).merge_body(asked));
        }
        db.commit_with(Declaration::of(chunks), None, |snap| {
            let now = ProcessBody::parse(&snap.body(id)?.unwrap_or_default());
            match now.queued() {
                true => Ok(()),
                false => Err(anyhow::anyhow!("{id} no longer waits")),
            }
        })?;
        Ok(())
    }
}

/// Who asked for queued run `id`: on a shared store the role that queued
/// it (when it is this worker's own, the person its host queued it for —
/// a page's user); else the person its placement names.
pub(crate) fn asker(db: &Substrate, id: &str, body: &ProcessBody) -> String {
    let said = body.placement.as_ref().and_then(|p| p.asked_by.clone());
    if db.is_shared() {
        let stamped = db.read(|snap| snap.made_by(id)).ok().flatten();
        let me = db.person();
        return match stamped {
            Some(Some(role)) if role == me => said.unwrap_or(role),
            Some(Some(role)) => role,
            // (from before authors were recorded: no one's word to take)
            _ => "someone unknown".into(),
        };
    }
    said.unwrap_or_else(|| db.person())
}

/// The queued run's configuration (its `agent-config` argument), if any.
fn queued_config(db: &Substrate, body: &ProcessBody) -> Option<(String, AgentConfig)> {
    db.read(|snap| {
        for arg in &body.arguments {
            let Some(item) = snap.chunk(arg)? else {
                continue;
            };
            if item.is_on("agent-config", PlacementType::Instance) {
                let config = AgentConfig::parse(&item.body_value()).ok();
                return Ok::<_, substrate::Error>(config.map(|c| (arg.clone(), c)));
            }
        }
        Ok(None)
    })
    .ok()
    .flatten()
}
