//! Whose queued runs a worker takes, and as whom it runs them (decision
//! 19, principals). A worker serves named people — its own person, and
//! those `hc worker --for` names (`*`: anyone) — and runs a run another
//! person asked for under its own person's settings, never wider than the
//! asker's ([`agent::AgentConfig::within`]): only an agent run, with one
//! configuration; one asking to work in the checkout itself
//! (`--no-worktree`) or in `bypass` mode is left for the asker's own
//! worker. Who asked is the database's word on a shared store — the role
//! that queued it — and what it runs must be what they queued: its
//! program, arguments and placement as first written, its arguments
//! written by no one else. On a file every run is its one person's.

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

/// Who asked for a queued run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Asker {
    /// The person whose authority it carries: on a shared store the role
    /// that queued it, on a file its one person.
    pub queued_by: String,
    /// Who it says asked (a page user the server queued it for).
    pub shown: String,
}

impl Serving {
    /// Whether the person `asker` is served here (`me`: the worker's).
    fn serves(&self, me: &str, asker: &str) -> bool {
        asker == me || self.people.iter().any(|p| p == asker || p == "*")
    }

    /// Why this worker does not take queued run `id` (`body`), if so.
    pub(crate) fn refuses(&self, db: &Substrate, id: &str, body: &ProcessBody) -> Option<String> {
        let me = db.person();
        let asker = match asker(db, id, body) {
            Ok(asker) if asker.queued_by == me => return None,
            Ok(asker) => asker.queued_by,
            Err(why) => return Some(why),
        };
        if !self.serves(&me, &asker) || self.own.is_none() {
            return Some(format!(
                "asked by {asker}; this worker serves {me} (hc worker --for {asker} takes their runs)"
            ));
        }
        if body.program != "program/agent" {
            return Some(format!(
                "asked by {asker} to run {}: another person's run is taken only when it is an \
                 agent's, run within this worker's person's settings",
                body.program
            ));
        }
        let worktree = body.placement.as_ref().and_then(|p| p.worktree.as_ref());
        if worktree.is_none() {
            return Some(format!(
                "asked by {asker} to work in the checkout itself (--no-worktree): only their own \
                 worker runs that"
            ));
        }
        match queued_config(db, body) {
            Err(why) => Some(format!("asked by {asker}: {why}")),
            Ok((_, config)) if config.permission_mode == PermissionMode::Bypass => Some(format!(
                "asked by {asker} in bypass mode: only their own worker runs that"
            )),
            Ok(_) => None,
        }
    }

    /// Before queued run `id` (`body`) is claimed: when another person
    /// asked for it, its configuration made no wider than this worker's
    /// person's (its questions asked of no one: their asker may not
    /// answer them), and who asked recorded as the store says. Refused
    /// (nothing written) once it no longer waits.
    pub(crate) fn restate(
        &self,
        db: &Substrate,
        id: &str,
        body: &ProcessBody,
    ) -> anyhow::Result<()> {
        let me = db.person();
        let asker = asker(db, id, body).map_err(anyhow::Error::msg)?;
        let Some(own) = self.own.as_ref().filter(|_| asker.queued_by != me) else {
            return Ok(());
        };
        let (config_id, config) = queued_config(db, body).map_err(anyhow::Error::msg)?;
        let mut within = config.within(own);
        within.interactive = false;
        let mut chunks = vec![ChunkDecl::with_id(config_id).body(serde_json::to_value(within)?)];
        if let Some(mut placement) = body.placement.clone() {
            placement.asked_by = Some(asker.queued_by);
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

/// Who asked for queued run `id` (`body`), or why that cannot be known.
/// On a shared store: the role that queued it — and what it runs is what
/// they queued (program, arguments, worktree and labels as first written;
/// its arguments written by them, or restated by this worker's person);
/// a run its own host queued for another (a page's user) is shown as
/// theirs. On a file: its one person, shown as its placement says.
pub(crate) fn asker(db: &Substrate, id: &str, body: &ProcessBody) -> Result<Asker, String> {
    let me = db.person();
    let said = body.placement.as_ref().and_then(|p| p.asked_by.clone());
    if !db.is_shared() {
        return Ok(Asker {
            queued_by: me.clone(),
            shown: said.unwrap_or(me),
        });
    }
    let read = db.read(|snap| {
        let first = snap.made_by(id)?;
        let writers = snap.writers(&body.arguments)?;
        Ok::<_, substrate::Error>((first, writers))
    });
    let (first, writers) = read.map_err(|e| format!("cannot read who queued it: {e}"))?;
    let Some((Some(queued_by), first)) = first else {
        return Err(
            "it was queued before authors were recorded, or by no one the store names: queue it \
             again"
                .into(),
        );
    };
    let then = ProcessBody::parse(&first);
    let placed = |b: &ProcessBody| {
        b.placement
            .as_ref()
            .map(|p| (p.worktree.clone(), p.labels.clone()))
    };
    let same = then.program == body.program
        && then.arguments == body.arguments
        && placed(&then) == placed(body);
    if !same {
        return Err(format!(
            "what it runs was changed since {queued_by} queued it (its program, arguments or \
             placement): it is not taken"
        ));
    }
    let stranger = writers
        .iter()
        .find(|w| w.as_deref() != Some(queued_by.as_str()) && w.as_deref() != Some(me.as_str()));
    if let Some(other) = stranger {
        return Err(format!(
            "its arguments were written by {}, not by {queued_by} who queued it: it is not taken",
            other
                .as_deref()
                .unwrap_or("someone before authors were recorded")
        ));
    }
    let shown = match (queued_by == me, said) {
        (true, Some(said)) => said,
        _ => queued_by.clone(),
    };
    Ok(Asker { queued_by, shown })
}

/// The queued run's one configuration: its one `agent-config` argument.
fn queued_config(db: &Substrate, body: &ProcessBody) -> Result<(String, AgentConfig), String> {
    let found = db
        .read(|snap| {
            let mut found = Vec::new();
            for arg in &body.arguments {
                let Some(item) = snap.chunk(arg)? else {
                    continue;
                };
                if item.is_on("agent-config", PlacementType::Instance) {
                    found.push((arg.clone(), item.body_value()));
                }
            }
            Ok::<_, substrate::Error>(found)
        })
        .map_err(|e| format!("cannot read its configuration: {e}"))?;
    match found.as_slice() {
        [(id, body)] => AgentConfig::parse(body)
            .map(|c| (id.clone(), c))
            .map_err(|e| e.to_string()),
        [] => Err("it has no configuration (agent-config) to run within".into()),
        _ => Err("it has more than one configuration (agent-config)".into()),
    }
}
