//! Watching one process from spawn to its terminal commit: the protocol on
//! its stdio, its stderr's tail, its timeout (paused while it awaits its
//! own children), a request to end it, its exit.

use super::end::{Ending, finish};
use super::spawn::{Input, Started};
use crate::config::Context;
use crate::connection::{Connection, OUT_QUEUE, Ops, ReadEnd, pump};
use crate::core::Core;
use crate::slot::{Slot, first};
use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};

/// How long a program that has exited gets to have its last lines read.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Watches one process from spawn to its terminal commit.
pub(super) async fn supervise<O: Ops>(
    core: Arc<Core>,
    ops: O,
    slot: Arc<Slot>,
    mut child: Started,
    budget: Duration,
) {
    let pid = child.pid();
    slot.set_group(child.group.take());
    let (out_tx, out_rx) = mpsc::channel::<String>(OUT_QUEUE);
    let writer = match child.stdin.take() {
        Some(stdin) => tokio::spawn(pump(out_rx, stdin)),
        None => tokio::spawn(async {}),
    };
    let log = service_log(&core, &slot);
    let stderr_tail = tokio::spawn(read_tail(child.stderr.take(), log));
    let connection = Arc::new(Connection::new(
        ops,
        Context::process(&slot.id),
        out_tx,
        false,
        slot.service.clone(),
    ));
    let stdout = child.stdout.take();
    let reading = Arc::clone(&connection);
    let mut reader = Box::pin(async move {
        match stdout {
            Some(out) => reading.serve(out).await,
            None => ReadEnd::Eof,
        }
    });
    let mut deadline = Box::pin(expiry(slot.pauses(), budget));
    let mut end_rx = slot.end_requests();
    let mut finishes = slot.finishes();
    let mut finished = false;
    let mut ending: Option<Ending> = None;
    let mut exit: Option<std::process::ExitStatus> = None;
    let mut reader_done = false;
    let mut exited_at: Option<Instant> = None;
    while !(reader_done && exit.is_some()) {
        let grace = exited_at.map_or(DRAIN_GRACE, |t| DRAIN_GRACE.saturating_sub(t.elapsed()));
        tokio::select! {
            end = &mut reader, if !reader_done => {
                reader_done = true;
                if let ReadEnd::Malformed(why) = end {
                    tracing::debug!(process = %slot.id, "malformed output: {why}");
                    ending.get_or_insert(Ending::failed("protocol: malformed output"));
                    contain::kill_group(pid);
                }
            }
            status = child.end.wait(), if exit.is_none() => {
                exit = Some(status.unwrap_or_else(|_| std::process::ExitStatus::from_raw(9)));
                exited_at = Some(Instant::now());
                contain::kill_group(pid); // whatever it forked and left behind
            }
            reason = first(&mut end_rx), if ending.is_none() => {
                let reason = reason.unwrap_or_else(|| "cancelled".into());
                ending = Some(Ending::failed(reason));
                contain::kill_group(pid);
            }
            how = first(&mut finishes), if !finished && ending.is_none() => {
                // Its own `finish`: the end committed now; it has the
                // drain grace to exit.
                finished = true;
                // On a task of its own: ending it waits for its children
                // to end, and this loop must go on serving the program
                // meanwhile (it may still be answering them).
                if let Some(how) = how {
                    let (core, slot) = (Arc::clone(&core), Arc::clone(&slot));
                    tokio::spawn(async move {
                        finish(&core, &slot, Ending::finished(how), String::new()).await;
                    });
                }
                exited_at.get_or_insert_with(Instant::now);
            }
            () = tokio::time::sleep(grace), if finished && exit.is_none() => {
                contain::kill_group(pid);
                exit = Some(std::process::ExitStatus::from_raw(9));
            }
            () = &mut deadline, if ending.is_none() && exit.is_none() => {
                ending = Some(Ending::failed("timeout"));
                contain::kill_group(pid);
            }
            () = tokio::time::sleep(grace), if exit.is_some() && !reader_done => {
                reader_done = true; // a grandchild holds stdout open; stop waiting
            }
        }
    }
    drop(reader);
    connection.close();
    writer.abort();
    let ending = match (ending, exit) {
        (Some(ending), _) => ending,
        (None, Some(status)) => Ending::exited(status),
        (None, None) => Ending::failed("killed"),
    };
    if !finished {
        let tail = stderr_tail.await.unwrap_or_default();
        finish(&core, &slot, ending, tail).await;
    } else {
        stderr_tail.abort();
    }
    // its groups (and their stem), for the next run, once it is gone
    if let Some(group) = slot.take_group() {
        let core = std::sync::Arc::clone(&core);
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(pool) = &core.cgroups {
                pool.give_back(group);
            }
        })
        .await;
    }
}

/// Resolves when `budget` of unpaused time has passed.
pub(super) async fn expiry(mut paused: watch::Receiver<usize>, budget: Duration) {
    let mut left = budget;
    loop {
        if *paused.borrow_and_update() > 0 {
            if paused.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
            continue;
        }
        let started = Instant::now();
        tokio::select! {
            () = tokio::time::sleep(left) => return,
            changed = paused.changed() => {
                left = left.saturating_sub(started.elapsed());
                if changed.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// The file a service's stderr is appended to, when the host keeps logs.
fn service_log(core: &Core, slot: &Slot) -> Option<std::fs::File> {
    let service = slot.service.as_ref()?;
    let dir = core.config.log_dir.as_ref()?;
    let name = service
        .program
        .trim_start_matches("program/")
        .replace('/', "-");
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::create_dir_all(dir).ok()?;
    // never appended through a link (a checkout could ship one)
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        tracing::warn!("not logging {name}: {} is a symbolic link", dir.display());
        return None;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(format!("{name}.log")))
        .inspect_err(|e| tracing::warn!("cannot open the log of {name}: {e}"))
        .ok()
}

/// The last [`STDERR_TAIL_BYTES`](super::STDERR_TAIL_BYTES) of a stream, as
/// text; all of it appended to `log` too, when there is one.
async fn read_tail(stderr: Option<Input>, mut log: Option<std::fs::File>) -> String {
    use std::io::Write;
    let Some(mut stderr) = stderr else {
        return String::new();
    };
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Some(file) = &mut log
            && file.write_all(&buf[..n]).is_err()
        {
            log = None;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * super::STDERR_TAIL_BYTES {
            tail.drain(..tail.len() - super::STDERR_TAIL_BYTES);
        }
    }
    if tail.len() > super::STDERR_TAIL_BYTES {
        tail.drain(..tail.len() - super::STDERR_TAIL_BYTES);
    }
    String::from_utf8_lossy(&tail).into_owned()
}
