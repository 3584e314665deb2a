//! A served run: its process committed like any other, then handed to the
//! service its program names (`served_by`) with a `run` event; it ends
//! with the service's `finish`, or — with a `cancel` event to the service —
//! on a cancel, its timeout or its parent's end, or when the service ends.

use super::end::{Ending, finish};
use super::supervise::expiry;
use crate::config::ProcessId;
use crate::core::Core;
use crate::error::Result;
use crate::services::{Service, State};
use crate::slot::{Slot, first};
use protocol::Event;
use protocol::RunArgs;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Carries run `slot` of `program` through `service` to its terminal commit.
/// `start` starts the service's process when it is down.
pub(super) async fn serve_run(
    core: Arc<Core>,
    start: impl Fn(RunArgs) -> Result<ProcessId> + Send,
    slot: Arc<Slot>,
    service: Arc<Service>,
    program: String,
    budget: Duration,
) {
    let mut deadline = Box::pin(expiry(slot.pauses(), budget));
    let mut ends = slot.end_requests();
    let ready = tokio::select! {
        ready = service.ensure(start) => ready.map_err(|e| {
            Ending::failed(format!("service `{}` is not available: {e}", service.program))
        }),
        reason = first(&mut ends) => Err(Ending::failed(reason_of(reason))),
        () = &mut deadline => Err(Ending::failed("timeout")),
    };
    let ending = match ready {
        Ok((process, out)) => {
            let run = Handed {
                slot: &slot,
                service: &service,
                process,
                out,
            };
            run.carry(&program, &mut deadline, &mut ends).await
        }
        Err(ending) => ending,
    };
    service.release(&slot.id);
    finish(&core, &slot, ending, String::new()).await;
}

fn reason_of(reason: Option<String>) -> String {
    reason.unwrap_or_else(|| "cancelled".into())
}

/// A run handed to a ready service: `process` is the service's, `out` its
/// events' way.
struct Handed<'a> {
    slot: &'a Arc<Slot>,
    service: &'a Arc<Service>,
    process: String,
    out: mpsc::Sender<String>,
}

impl Handed<'_> {
    async fn carry(
        &self,
        program: &str,
        deadline: &mut std::pin::Pin<Box<impl Future<Output = ()>>>,
        ends: &mut watch::Receiver<Option<String>>,
    ) -> Ending {
        self.service.hand(&self.slot.id);
        let run = Event::Run {
            process: self.slot.id.clone(),
            program: program.to_owned(),
        };
        if !self.send(&run).await {
            return self.service_gone();
        }
        let mut finishes = self.slot.finishes();
        let mut states = self.service.states();
        let mine =
            |s: &State| matches!(s, State::Ready { process, .. } if *process == self.process);
        tokio::select! {
            how = first(&mut finishes) => match how {
                Some(how) => Ending::finished(how),
                None => Ending::failed("killed"),
            },
            reason = first(ends) => {
                self.cancel().await;
                Ending::failed(reason_of(reason))
            }
            () = deadline => {
                self.cancel().await;
                Ending::failed("timeout")
            }
            _ = async { states.wait_for(|s| !mine(s)).await.map(drop) } => self.service_gone(),
        }
    }

    /// Tells the service the run is over (after which acting for it is refused).
    async fn cancel(&self) {
        self.service.release(&self.slot.id);
        let cancel = Event::Cancel {
            process: self.slot.id.clone(),
        };
        self.send(&cancel).await;
    }

    async fn send(&self, event: &Event) -> bool {
        let Ok(mut line) = serde_json::to_string(event) else {
            return false;
        };
        line.push('\n');
        self.out.send(line).await.is_ok()
    }

    fn service_gone(&self) -> Ending {
        let why = match self.service.state() {
            State::Down {
                error: Some(error), ..
            } => error,
            _ => "exited".into(),
        };
        Ending::failed(format!(
            "service `{}` ended during the run: {why}",
            self.service.program
        ))
    }
}
