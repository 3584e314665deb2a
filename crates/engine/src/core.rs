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
    /// The pre-forked trampoline contained runs are forked from.
    pub zygote: Option<contain::Zygote>,
    /// Contained runs' control groups (none: bounded by resource
    /// limits), and a run's memory when configuration says nothing.
    pub cgroups: Option<contain::bounds::Pool>,
    pub default_memory: u64,
    pub slots: Slots,
    /// The services started (or tried), by program id.
    pub services: Services,
    pub subs: Arc<Subscriptions>,
    /// The webview programs' tiles, live.
    pub tiles: crate::tiles::Tiles,
    /// This engine's id, on every process it runs.
    pub id: String,
    /// Its lease, held while it lives (none when the substrate's directory
    /// takes no files: its processes then look gone to the next engine).
    pub _lease: Option<Lease>,
}
