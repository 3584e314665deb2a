//! What every part of a running engine shares: the substrate, the
//! configuration, containment's long-lived helpers, the live processes'
//! slots and the subscriptions. [`Engine`](crate::Engine) is a handle on
//! one of these.

use crate::config::EngineConfig;
use crate::lease::Lease;
use crate::services::Services;
use crate::slot::Slots;
use crate::subs::Subscriptions;
use std::sync::Arc;
use substrate::Substrate;

/// An engine's state.
pub(crate) struct Core {
    pub db: Arc<Substrate>,
    pub config: EngineConfig,
    /// Whether this kernel enforces Landlock (checked once, at open).
    pub landlock: bool,
    /// The holder of the empty network namespace contained runs share.
    pub net_holder: Option<contain::NetHolder>,
    /// Contained runs' control groups (none: bounded by resource
    /// limits), and a run's memory when configuration says nothing.
    /// Before the zygote, so dropped first: the groups' stems, the
    /// zygote's children, end while it is there to reap them.
    pub cgroups: Option<contain::bounds::Pool>,
    /// The pre-forked trampoline contained runs are forked from.
    pub zygote: Option<contain::Zygote>,
    pub default_memory: u64,
    pub slots: Slots,
    /// The services started (or tried), by program id.
    pub services: Services,
    pub subs: Arc<Subscriptions>,
    /// The webview programs' tiles, live.
    pub tiles: crate::tiles::Tiles,
    /// This engine's id, on every process it runs.
    pub id: String,
    /// Whether its lease chunk is in the substrate (made at its first
    /// claim, renewed from then on).
    pub leased: std::sync::Mutex<bool>,
    /// Its lease, held while it lives (none when the substrate's directory
    /// takes no files: its processes then look gone to the next engine).
    pub _lease: Option<Lease>,
    /// The project tree whose runs' file effects are recorded.
    pub effects: Option<Arc<effects::Tree>>,
}

impl Core {
    /// `group`'s stem, forked when it has none (and the engine forks
    /// stems): a run then starts born in its groups (blocking: the move
    /// of the stem into them waits for the kernel).
    pub fn give_stem(&self, group: &mut contain::bounds::Group) {
        if group.stem.is_some() || !self.config.stems() {
            return;
        }
        if let Some(zygote) = &self.zygote {
            group.stem = zygote
                .stem(&group.dirs)
                .inspect_err(|e| tracing::debug!("no stem in a run's group: {e}"))
                .ok();
        }
    }

    /// The first group's stem, forked while the engine starts (so the
    /// first run — the agent — does not wait for it).
    pub fn stem_ahead(&self) {
        let Some(pool) = &self.cgroups else {
            return;
        };
        let usual = contain::bounds::Bounds {
            processes: contain::bounds::DEFAULT_PROCESSES,
            memory: self.default_memory,
            cgroups: Vec::new(),
        };
        pool.prepare_idle(&usual, |group| self.give_stem(group));
    }
}
