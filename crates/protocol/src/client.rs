//! The Rust SDK: a typed client of the engine over any byte stream — a
//! program's stdin/stdout, or a host's pipe to `hc serve --stdio`.
//! Requests may be in flight concurrently; responses are matched by id and
//! events arrive on their own stream.

use crate::wire::{
    Boundary, ErrorBody, ErrorCode, Event, Op, RawIncoming, Request, RunArgs, RunResult,
    SubscribeOpts, SubscribeResult,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use substrate::{ChunkDecl, Commit, Declaration, ScopeOpts, ScopeResult};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// What went wrong with a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The engine answered with an error.
    #[error("{}: {}", .0.code.as_str(), .0.message)]
    Engine(ErrorBody),
    /// The connection closed before the answer came.
    #[error("the connection to the engine closed")]
    Closed,
    /// The answer did not have the expected shape.
    #[error("unexpected answer from the engine: {0}")]
    Decode(String),
}

impl ClientError {
    /// The engine's error code, if the engine answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Engine(body) => Some(body.code),
            _ => None,
        }
    }
}

/// A response as the reader hands it over: the result's JSON text, or
/// the engine's error.
type RawOutcome = Result<Box<RawValue>, ErrorBody>;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<RawOutcome>>>>;

/// A connection to the engine. Cheap to clone; every clone shares it.
#[derive(Clone)]
pub struct Client {
    closed: Arc<std::sync::atomic::AtomicBool>,
    next_id: Arc<AtomicU64>,
    pending: Pending,
    out: mpsc::UnboundedSender<String>,
    /// Bytes sent to the writer and not yet written: what a notification
    /// is dropped over ([`NOTIFY_BACKLOG`]).
    queued: Arc<AtomicUsize>,
}

/// Bytes waiting to be written past which [`Client::notify_now`] drops
/// what it is given: a program printing faster than the engine reads
/// keeps its memory bounded by this, not by what it prints.
pub const NOTIFY_BACKLOG: usize = 1 << 20;

/// The events of a connection (`scope_changed`, `lagged`, …), in order.
pub struct Events(mpsc::UnboundedReceiver<Event>);

impl Events {
    /// The next event; `None` once the connection has closed.
    pub async fn recv(&mut self) -> Option<Event> {
        self.0.recv().await
    }

    /// An event already received, without waiting.
    pub fn try_recv(&mut self) -> Option<Event> {
        self.0.try_recv().ok()
    }
}

impl Client {
    /// Speaks the protocol over `reader`/`writer`. Spawns two tasks on the
    /// current tokio runtime; they end when the stream closes.
    pub fn connect<R, W>(reader: R, writer: W) -> (Client, Events)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, mut lines) = mpsc::unbounded_channel::<String>();
        let (event_tx, events) = mpsc::unbounded_channel();
        let pending: Pending = Arc::default();
        let queued = Arc::new(AtomicUsize::new(0));
        let written = Arc::clone(&queued);
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(line) = lines.recv().await {
                if writer.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
                written.fetch_sub(line.len(), Ordering::Relaxed);
                // Send what is queued in one go, then flush once.
                while let Ok(more) = lines.try_recv() {
                    if writer.write_all(more.as_bytes()).await.is_err() {
                        return;
                    }
                    written.fetch_sub(more.len(), Ordering::Relaxed);
                }
                if writer.flush().await.is_err() {
                    break;
                }
            }
        });
        let reading = Arc::clone(&pending);
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let closing = Arc::clone(&closed);
        tokio::spawn(async move {
            let mut reader = BufReader::new(reader);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                match RawIncoming::parse(line.trim_ascii_end()) {
                    Ok(RawIncoming::Event(event)) => {
                        let _ = event_tx.send(event);
                    }
                    Ok(RawIncoming::Response { id, outcome }) => {
                        let waiter = id.and_then(|id| {
                            reading
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .remove(&id)
                        });
                        if let Some(waiter) = waiter {
                            let _ = waiter.send(outcome);
                        }
                    }
                    Err(e) => eprintln!("hermitcrab sdk: ignoring a line from the engine: {e}"),
                }
            }
            // Closed: every request still waiting fails with `Closed`.
            closing.store(true, Ordering::Release);
            reading
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        });
        (
            Client {
                closed,
                next_id: Arc::new(AtomicU64::new(1)),
                pending,
                out,
                queued,
            },
            Events(events),
        )
    }

    /// The client of a program the engine started: stdin and stdout. When
    /// they are pipes (as the engine makes them) they are driven by the
    /// runtime's event loop; otherwise through tokio's blocking stdio.
    pub fn from_stdio() -> (Client, Events) {
        match stdio_pipes() {
            Ok((input, output)) => Client::connect(input, output),
            Err(_) => Client::connect(tokio::io::stdin(), tokio::io::stdout()),
        }
    }

    /// Whether the engine's side of the connection has closed (a program
    /// whose engine is gone has nothing left to do).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Sends one request and waits for its answer.
    pub async fn request(&self, op: Op) -> Result<Value, ClientError> {
        self.request_for(None, op).await
    }

    /// Sends one request — for the served run `process`, when a service
    /// acts for one — and waits for its answer.
    pub async fn request_for(&self, process: Option<&str>, op: Op) -> Result<Value, ClientError> {
        self.typed_for(process, op).await
    }

    /// Sends one request and waits for its answer, as its result's JSON.
    async fn raw_for(&self, process: Option<&str>, op: Op) -> Result<Box<RawValue>, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request {
            id,
            process: process.map(str::to_owned),
            op,
        };
        let mut line =
            serde_json::to_string(&request).map_err(|e| ClientError::Decode(e.to_string()))?;
        line.push('\n');
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tx);
        // The reader marks the connection closed before it clears what is
        // waiting (under the same lock): a request that went in after that
        // would wait forever — one the engine can no longer answer.
        if self.closed.load(Ordering::Acquire) || !self.send(line) {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            return Err(ClientError::Closed);
        }
        match rx.await {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(body)) => Err(ClientError::Engine(body)),
            Err(_) => Err(ClientError::Closed),
        }
    }

    async fn typed<T: DeserializeOwned>(&self, op: Op) -> Result<T, ClientError> {
        self.typed_for(None, op).await
    }

    /// The answer read straight from its JSON into `T`.
    async fn typed_for<T: DeserializeOwned>(
        &self,
        process: Option<&str>,
        op: Op,
    ) -> Result<T, ClientError> {
        let raw = self.raw_for(process, op).await?;
        serde_json::from_str(raw.get()).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// Reads the intersection of `scopes`.
    pub async fn scope(
        &self,
        scopes: &[&str],
        opts: ScopeOpts,
    ) -> Result<ScopeResult, ClientError> {
        self.scope_for(None, scopes, opts).await
    }

    async fn scope_for(
        &self,
        process: Option<&str>,
        scopes: &[&str],
        opts: ScopeOpts,
    ) -> Result<ScopeResult, ClientError> {
        let scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        self.typed_for(process, Op::Scope { scopes, opts }).await
    }

    /// Applies a declaration.
    pub async fn commit(&self, declaration: Declaration) -> Result<Commit, ClientError> {
        self.typed(Op::Commit { declaration }).await
    }

    /// Starts `program` (an id or a name); answers with the process id.
    pub async fn run(&self, program: &str, args: RunArgs) -> Result<String, ClientError> {
        let result: RunResult = self
            .typed(Op::Run {
                program: program.to_owned(),
                args: Box::new(args),
            })
            .await?;
        Ok(result.process)
    }

    /// Waits for the processes to end; answers with each one's final scope.
    pub async fn await_processes(
        &self,
        ids: &[&str],
    ) -> Result<HashMap<String, ScopeResult>, ClientError> {
        let processes = ids.iter().map(|s| (*s).to_owned()).collect();
        self.typed(Op::Await { processes }).await
    }

    /// Ends a process this program started (idempotent).
    pub async fn cancel(&self, id: &str) -> Result<(), ClientError> {
        self.request(Op::Cancel {
            process: id.to_owned(),
        })
        .await
        .map(drop)
    }

    /// Subscribes to commits touching `scopes` (and, `deep`, their subtrees).
    pub async fn subscribe(&self, scopes: &[&str], deep: bool) -> Result<String, ClientError> {
        let scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        let result: SubscribeResult = self
            .typed(Op::Subscribe {
                scopes,
                opts: SubscribeOpts { deep },
            })
            .await?;
        Ok(result.subscription_id)
    }

    /// Ends a subscription.
    pub async fn unsubscribe(&self, id: &str) -> Result<(), ClientError> {
        self.request(Op::Unsubscribe {
            subscription_id: id.to_owned(),
        })
        .await
        .map(drop)
    }

    /// Sends `data` to live subscribers, unpersisted.
    pub async fn notify(&self, data: Value) -> Result<(), ClientError> {
        self.request(Op::Notify { data }).await.map(drop)
    }

    /// Sends `data` to live subscribers without waiting for the engine's
    /// answer (streamed text: the next delta need not wait a round trip).
    /// Lines go out in the order they are sent; an error is lost, and so
    /// is `data` when more than [`NOTIFY_BACKLOG`] bytes wait to be
    /// written (it is for display only: what is kept is committed).
    pub fn notify_now(&self, data: Value) {
        if self.queued.load(Ordering::Relaxed) > NOTIFY_BACKLOG {
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut line) = serde_json::to_string(&Request {
            id,
            process: None,
            op: Op::Notify { data },
        }) {
            line.push('\n');
            self.send(line);
        }
    }

    /// Queues a line for the writer, counting its bytes until written;
    /// false once the writer is gone.
    fn send(&self, line: String) -> bool {
        let len = line.len();
        self.queued.fetch_add(len, Ordering::Relaxed);
        let sent = self.out.send(line).is_ok();
        if !sent {
            self.queued.fetch_sub(len, Ordering::Relaxed);
        }
        sent
    }
}

/// What a service asks for one run it serves: each request carries the
/// run's process and is judged against that run's boundaries.
pub struct ServedRun<'c> {
    client: &'c Client,
    process: String,
}

impl Client {
    /// Acts for the served run `process` (a service's).
    pub fn for_run(&self, process: &str) -> ServedRun<'_> {
        ServedRun {
            client: self,
            process: process.to_owned(),
        }
    }

    /// Starts the service `program` if it is not running and waits, at most
    /// `timeout_ms`, until it is ready; answers its process.
    pub async fn service(
        &self,
        program: &str,
        timeout_ms: Option<u64>,
    ) -> Result<String, ClientError> {
        let result: RunResult = self
            .typed(Op::Service {
                program: program.to_owned(),
                timeout_ms,
            })
            .await?;
        Ok(result.process)
    }

    /// Says this service is ready to serve runs.
    pub async fn ready(&self) -> Result<(), ClientError> {
        self.request(Op::Ready {}).await.map(drop)
    }

    /// Ends this program's own run: `error` for a failure.
    pub async fn finish(&self, error: Option<String>) -> Result<(), ClientError> {
        self.request(finish_op(error, None, None)).await.map(drop)
    }

    /// Ends this program's own run, completed, with its result: the
    /// `engine/output` body and the end in one commit.
    pub async fn finish_with(&self, output: Value) -> Result<(), ClientError> {
        self.request(finish_op(None, Some(output), None))
            .await
            .map(drop)
    }

    /// Ends this program's own run in one commit: its result, `body`
    /// merged into its process chunk, and its end (`error`: failed).
    pub async fn finish_run(
        &self,
        output: Value,
        body: Value,
        error: Option<String>,
    ) -> Result<(), ClientError> {
        self.request(finish_op(error, Some(output), Some(body)))
            .await
            .map(drop)
    }
}

fn finish_op(error: Option<String>, output: Option<Value>, body: Option<Value>) -> Op {
    let status = if error.is_some() {
        crate::FinishStatus::Failed
    } else {
        crate::FinishStatus::Completed
    };
    Op::Finish {
        status,
        error,
        output,
        body,
    }
}

impl ServedRun<'_> {
    /// The run's process.
    pub fn process(&self) -> &str {
        &self.process
    }

    /// Reads as the run may.
    pub async fn scope(
        &self,
        scopes: &[&str],
        opts: ScopeOpts,
    ) -> Result<ScopeResult, ClientError> {
        self.client
            .scope_for(Some(&self.process), scopes, opts)
            .await
    }

    /// Commits as the run may (its output, say).
    pub async fn commit(&self, declaration: Declaration) -> Result<Commit, ClientError> {
        let op = Op::Commit { declaration };
        self.client.typed_for(Some(&self.process), op).await
    }

    /// Notifies the run's subscribers (progress).
    pub async fn notify(&self, data: Value) -> Result<(), ClientError> {
        self.client
            .request_for(Some(&self.process), Op::Notify { data })
            .await
            .map(drop)
    }

    /// Ends the run: `error` for a failure.
    pub async fn finish(&self, error: Option<String>) -> Result<(), ClientError> {
        self.client
            .request_for(Some(&self.process), finish_op(error, None, None))
            .await
            .map(drop)
    }
}

/// A shorthand for [`RunArgs`] with argument chunks and both boundaries.
pub fn run_args(
    chunks: Vec<ChunkDecl>,
    read: Option<Boundary>,
    write: Option<Boundary>,
) -> RunArgs {
    RunArgs {
        chunks,
        read_boundary: read,
        write_boundary: write,
        ..RunArgs::default()
    }
}

/// Stdin and stdout as event-driven pipes (duplicated descriptors, so the
/// process's own stdio stays as it was).
fn stdio_pipes() -> std::io::Result<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    let input = std::io::stdin().as_fd().try_clone_to_owned()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned()?;
    Ok((
        tokio::net::unix::pipe::Receiver::from_owned_fd(input)?,
        tokio::net::unix::pipe::Sender::from_owned_fd(output)?,
    ))
}
