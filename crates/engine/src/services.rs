//! Services: programs with `runtime: "service"`, started at most once per
//! engine when something first needs them, kept up, restarted after an
//! exit with backoff (1 s, doubling to 30 s; after five failures in a row
//! their dependents fail with the reason), and the runs they serve.

use crate::config::ProcessId;
use crate::error::{EngineError, Result};
use protocol::{Boundary, ErrorCode, RunArgs};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Failures in a row after which a service's dependents fail at once.
pub(crate) const MAX_FAILURES: u32 = 5;

/// The first retry's wait; it doubles, to at most [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between tries.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Where a service is.
#[derive(Clone, Debug)]
pub(crate) enum State {
    /// Not running: after `failures` failed tries in a row (none yet: 0),
    /// tried again no sooner than `retry_at`.
    Down {
        failures: u32,
        retry_at: Option<Instant>,
        error: Option<String>,
    },
    /// Its process is started and has not said `ready`.
    Starting {
        failures: u32,
        process: Option<ProcessId>,
    },
    /// Serving: events for its runs go to `out`.
    Ready {
        process: ProcessId,
        out: mpsc::Sender<String>,
    },
}

/// One service program.
pub(crate) struct Service {
    /// Its program chunk's id.
    pub program: String,
    state: watch::Sender<State>,
    /// The runs handed to it and not yet ended.
    served: Mutex<HashSet<ProcessId>>,
}

/// Every service this engine has started (or tried to).
#[derive(Default)]
pub(crate) struct Services(Mutex<HashMap<String, Arc<Service>>>);

impl Services {
    /// The service of program chunk `program`, made when first asked for.
    pub fn get(&self, program: &str) -> Arc<Service> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(map.entry(program.to_owned()).or_insert_with(|| {
            Arc::new(Service {
                program: program.to_owned(),
                state: watch::channel(State::Down {
                    failures: 0,
                    retry_at: None,
                    error: None,
                })
                .0,
                served: Mutex::default(),
            })
        }))
    }
}

/// The wait before try `failures + 1`.
fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(5);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF)
}

impl Service {
    /// Its state now.
    pub fn state(&self) -> State {
        self.state.borrow().clone()
    }

    /// Watches its state.
    pub fn states(&self) -> watch::Receiver<State> {
        self.state.subscribe()
    }

    /// Whether `process` is a run handed to it and not ended.
    pub fn serves(&self, process: &str) -> bool {
        self.lock_served().contains(process)
    }

    fn lock_served(&self) -> std::sync::MutexGuard<'_, HashSet<ProcessId>> {
        self.served.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands it run `process`.
    pub fn hand(&self, process: &str) {
        self.lock_served().insert(process.to_owned());
    }

    /// The run `process` ended.
    pub fn release(&self, process: &str) {
        self.lock_served().remove(process);
    }

    /// Its process `process` said `ready`: events for its runs go to `out`.
    pub fn ready(&self, process: &str, out: mpsc::Sender<String>) {
        self.state.send_replace(State::Ready {
            process: process.to_owned(),
            out,
        });
        tracing::debug!(service = %self.program, %process, "ready");
    }

    /// Its process `process` ended with `reason`: down, one failure more.
    pub fn exited(&self, process: &str, reason: &str) {
        self.state.send_if_modified(|state| {
            let failures = match state {
                State::Ready { process: p, .. } if p == process => 1,
                // (a start whose process id is not yet noted is this one:
                // one start is in flight at a time)
                State::Starting {
                    failures,
                    process: p,
                } if p.as_deref().is_none_or(|p| p == process) => *failures + 1,
                _ => return false,
            };
            *state = State::Down {
                failures,
                retry_at: Some(Instant::now() + backoff(failures)),
                error: Some(reason.to_owned()),
            };
            true
        });
        tracing::debug!(service = %self.program, %process, reason, "service ended");
    }

    /// Waits until it is ready — starting it when it is down, after its
    /// backoff — and answers its process and where its events go. Fails at
    /// once after [`MAX_FAILURES`] failures in a row (until its backoff
    /// has passed), or when it cannot be started.
    /// `start` starts its process with the run arguments it is given.
    pub async fn ensure(
        self: &Arc<Self>,
        start: impl Fn(RunArgs) -> Result<ProcessId>,
    ) -> Result<(ProcessId, mpsc::Sender<String>)> {
        let mut states = self.states();
        let mut tried = false;
        loop {
            let state = states.borrow_and_update().clone();
            match state {
                State::Ready { process, out } => return Ok((process, out)),
                State::Starting { .. } => {
                    tried = true;
                    let _ = states.changed().await;
                }
                // The start this need waited for failed: it fails with it.
                State::Down { error, .. } if tried => {
                    return Err(EngineError::new(
                        ErrorCode::RunFailed,
                        format!(
                            "service `{}` ended before it was ready: {}",
                            self.program,
                            error.as_deref().unwrap_or("exited")
                        ),
                    ));
                }
                State::Down {
                    failures,
                    retry_at,
                    error,
                } => {
                    if let Some(at) = retry_at.filter(|at| *at > Instant::now()) {
                        if failures >= MAX_FAILURES {
                            return Err(self.gave_up(failures, error.as_deref()));
                        }
                        tokio::time::sleep_until(at).await;
                    }
                    self.try_start(&start, failures)?;
                }
            }
        }
    }

    fn gave_up(&self, failures: u32, error: Option<&str>) -> EngineError {
        EngineError::new(
            ErrorCode::RunFailed,
            format!(
                "service `{}` failed {failures} times in a row (last: {}); it is tried again \
                 after {} s",
                self.program,
                error.unwrap_or("unknown"),
                MAX_BACKOFF.as_secs()
            ),
        )
    }

    /// Starts its process unless another caller already has.
    fn try_start(&self, start: impl Fn(RunArgs) -> Result<ProcessId>, failures: u32) -> Result<()> {
        let claimed = self.state.send_if_modified(|state| {
            let down = matches!(state, State::Down { retry_at, .. }
                if retry_at.is_none_or(|at| at <= Instant::now()));
            if down {
                *state = State::Starting {
                    failures,
                    process: None,
                };
            }
            down
        });
        if !claimed {
            return Ok(());
        }
        // Its own tree to write (and the programs it manages); all to read.
        let args = RunArgs {
            write_boundary: Some(Boundary::Roots(Vec::new())),
            ..RunArgs::default()
        };
        match start(args) {
            Ok(process) => {
                self.state.send_if_modified(|state| match state {
                    State::Starting { process: p, .. } if p.is_none() => {
                        *p = Some(process.clone());
                        true
                    }
                    _ => false,
                });
                Ok(())
            }
            Err(e) => {
                let failures = failures + 1;
                self.state.send_replace(State::Down {
                    failures,
                    retry_at: Some(Instant::now() + backoff(failures)),
                    error: Some(e.to_string()),
                });
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_to_thirty() {
        let waits: Vec<u64> = (1..=7).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 8, 16, 30, 30]);
    }
}
