//! A webview program's run: its process committed `running`, its tile
//! registered for a host to mount ([`crate::tiles`]); it ends with the
//! tile's `finish` (or the host closing it: completed), a cancel, its
//! timeout or its parent's end — or fails `TRANSPORT_CLOSED` once its
//! socket has been gone for the grace.

use super::end::{Ending, finish};
use super::supervise::expiry;
use crate::core::Core;
use crate::slot::{Slot, first};
use crate::tiles::{GRACE, TRANSPORT_CLOSED};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Carries tile `slot` to its terminal commit.
pub(super) async fn carry(
    core: Arc<Core>,
    slot: Arc<Slot>,
    mut sockets: watch::Receiver<u32>,
    budget: Duration,
) {
    let mut deadline = Box::pin(expiry(slot.pauses(), budget));
    let mut ends = slot.end_requests();
    let mut finishes = slot.finishes();
    let ending = tokio::select! {
        how = first(&mut finishes) => match how {
            Some(how) => Ending::finished(how),
            None => Ending::failed("killed"),
        },
        reason = first(&mut ends) => Ending::failed(reason.unwrap_or_else(|| "cancelled".into())),
        () = &mut deadline => Ending::failed("timeout"),
        () = gone_for_good(&mut sockets) => Ending::failed(TRANSPORT_CLOSED),
    };
    core.tiles.remove(&slot.id);
    finish(&core, &slot, ending, String::new()).await;
}

/// Resolves once the tile, having had a socket, has had none for the
/// grace (a socket that comes back within it starts the wait over).
async fn gone_for_good(sockets: &mut watch::Receiver<u32>) {
    if sockets.wait_for(|n| *n > 0).await.is_err() {
        return std::future::pending().await;
    }
    loop {
        if sockets.wait_for(|n| *n == 0).await.is_err() {
            return std::future::pending().await;
        }
        tokio::select! {
            () = tokio::time::sleep(GRACE) => return,
            back = async { sockets.wait_for(|n| *n > 0).await.is_ok() } => {
                if !back {
                    return std::future::pending().await;
                }
            }
        }
    }
}
