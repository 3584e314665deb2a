//! Webview programs (`runtime: "webview"`): a run is a tile a browser
//! host shows. Its process is committed `running` like a served run's; the
//! host asks for a one-time slot token ([`Tiles::issue`]) and the tile's
//! socket presents it ([`Tiles::attach`]) — never a process id of its own
//! saying — so the connection is bound, engine-side, to that process and
//! judged against its boundaries. The run completes when the host closes
//! the tile or the tile calls `finish`; it fails with `TRANSPORT_CLOSED`
//! when its socket has been gone for [`GRACE`] (a reload within it keeps
//! the process: the host asks for a new token).

use crate::config::ProcessId;
use crate::error::{EngineError, Result};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// How long a tile's process outlives its socket.
pub const GRACE: Duration = Duration::from_secs(5);

/// The error a tile's process fails with when its socket is gone for good.
pub const TRANSPORT_CLOSED: &str = "TRANSPORT_CLOSED";

/// The live tiles of an engine.
#[derive(Default)]
pub(crate) struct Tiles {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each tile's entry and how many sockets it has now.
    tiles: HashMap<ProcessId, Tile>,
    /// One-time tokens, each for a tile.
    tokens: HashMap<String, ProcessId>,
}

struct Tile {
    entry: String,
    sockets: watch::Sender<u32>,
}

impl Tiles {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the tile of `process`, showing `entry`; answers the watch
    /// of its socket count.
    pub fn add(&self, process: &str, entry: &str) -> watch::Receiver<u32> {
        let (sockets, watching) = watch::channel(0);
        self.lock().tiles.insert(
            process.to_owned(),
            Tile {
                entry: entry.to_owned(),
                sockets,
            },
        );
        watching
    }

    /// Forgets the tile of `process` (its run ended) and its tokens.
    pub fn remove(&self, process: &str) {
        let mut inner = self.lock();
        inner.tiles.remove(process);
        inner.tokens.retain(|_, p| p != process);
    }

    /// A fresh one-time token for the tile of `process`, and its entry.
    pub fn issue(&self, process: &str) -> Result<(String, String)> {
        let mut inner = self.lock();
        let entry = inner
            .tiles
            .get(process)
            .map(|t| t.entry.clone())
            .ok_or_else(|| {
                EngineError::not_found(format!("`{process}` is not a running webview program"))
            })?;
        let token = unguessable()?;
        inner.tokens.insert(token.clone(), process.to_owned());
        Ok((token, entry))
    }

    /// The process `token` is for, the token spent; a token unknown or
    /// used before is refused.
    pub fn attach(&self, token: &str) -> Result<ProcessId> {
        let mut inner = self.lock();
        let process = inner.tokens.remove(token).ok_or_else(|| {
            EngineError::boundary(
                "this slot token is not one the engine issued, or it was used already: a tile \
                 is bound once, by the host that mounts it",
            )
        })?;
        let tile = inner
            .tiles
            .get(&process)
            .ok_or_else(|| EngineError::not_found(format!("the tile of `{process}` has ended")))?;
        tile.sockets.send_modify(|n| *n += 1);
        Ok(process)
    }

    /// A socket of the tile of `process` is gone.
    pub fn detach(&self, process: &str) {
        if let Some(tile) = self.lock().tiles.get(process) {
            tile.sockets.send_modify(|n| *n = n.saturating_sub(1));
        }
    }
}

/// A token no one can guess from anything else the engine hands out: 128
/// bits from the OS's random source. (Ids are ULIDs made monotonic within
/// a millisecond — one seen, the next is the same plus one — so never a
/// capability.)
fn unguessable() -> Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| EngineError::internal(format!("cannot read random bytes for a slot: {e}")))?;
    Ok(format!(
        "slot_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}
