//! One protocol connection: JSON lines in, responses and events out. The
//! same code serves a program's stdio (a malformed line is fatal) and a host
//! (`hc serve --stdio`: a malformed line is answered, and the host goes on).

use crate::config::{Context, ProcessId, SubscriptionId};
use crate::error::{EngineError, Result};
use crate::services::Service;
use crate::slot::Finish;
use crate::subs::Sink;
use protocol::{
    Declaration, ErrorBody, ErrorCode, FinishStatus, MAX_LINE_BYTES, Op, ParseError, Request,
    RunArgs, RunResult, ScopeOpts, ScopeResult, SubscribeOpts, SubscribeResult,
};
use serde::Serialize;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// Lines queued for a program before events are dropped (and it is told
/// `lagged`) and responses wait.
pub(crate) const OUT_QUEUE: usize = 4096;

/// Why a connection stopped reading.
#[derive(Debug)]
pub(crate) enum ReadEnd {
    /// The other side closed its output.
    Eof,
    /// A program sent a line that is not a JSON object (fatal).
    Malformed(String),
}

/// What a connection answers requests with: the engine's operations, as
/// `ctx` may use them. ([`Engine`](crate::Engine) is the one there is.)
pub(crate) trait Ops: Clone + Send + Sync + 'static {
    fn scope(&self, ctx: &Context, ids: &[String], opts: &ScopeOpts) -> Result<ScopeResult>;
    fn commit(&self, ctx: &Context, decl: Declaration) -> Result<substrate::Commit>;
    fn run(&self, ctx: &Context, program: &str, args: RunArgs) -> Result<ProcessId>;
    fn cancel(&self, ctx: &Context, process: &str) -> Result<()>;
    fn await_processes(
        &self,
        ctx: &Context,
        ids: &[ProcessId],
    ) -> impl Future<Output = Result<HashMap<ProcessId, ScopeResult>>> + Send;
    fn subscribe_to(
        &self,
        ctx: &Context,
        scopes: &[String],
        opts: SubscribeOpts,
        sink: Sink,
    ) -> Result<SubscriptionId>;
    fn unsubscribe(&self, id: &str);
    fn notify(&self, from: &str, data: serde_json::Value) -> Result<()>;
    /// Ends `ctx`'s process as `how` says; resolves once its terminal
    /// status is committed.
    fn finish(&self, ctx: &Context, how: Finish) -> impl Future<Output = Result<()>> + Send;
    /// Starts the service `program` when it is not running; resolves with
    /// its process once it is ready (at most `timeout_ms`).
    fn service(
        &self,
        ctx: &Context,
        program: &str,
        timeout_ms: Option<u64>,
    ) -> impl Future<Output = Result<ProcessId>> + Send;
}

/// A connection to a program or a host.
pub(crate) struct Connection<O: Ops> {
    engine: O,
    ctx: Context,
    out: mpsc::Sender<String>,
    host: bool,
    /// The service this connection's program is, when it is one: it may act
    /// for the runs handed to it, and say `ready`.
    service: Option<Arc<Service>>,
    /// `await`s in flight: they are the only requests that outlive a line.
    awaits: Mutex<JoinSet<()>>,
    subscriptions: Mutex<Vec<String>>,
}

impl<O: Ops> Connection<O> {
    pub(crate) fn new(
        engine: O,
        ctx: Context,
        out: mpsc::Sender<String>,
        host: bool,
        service: Option<Arc<Service>>,
    ) -> Connection<O> {
        Connection {
            engine,
            ctx,
            out,
            host,
            service,
            awaits: Mutex::new(JoinSet::new()),
            subscriptions: Mutex::new(Vec::new()),
        }
    }

    /// Reads and answers requests until the input ends (or, for a program,
    /// a malformed line).
    pub(crate) async fn serve<R: AsyncRead + Unpin>(self: &Arc<Self>, input: R) -> ReadEnd {
        let mut input = BufReader::with_capacity(64 * 1024, input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let limit = (MAX_LINE_BYTES + 1) as u64;
            let read = (&mut input).take(limit).read_until(b'\n', &mut line).await;
            match read {
                Ok(0) | Err(_) => return ReadEnd::Eof,
                Ok(_) => {}
            }
            if line.last() != Some(&b'\n') && line.len() > MAX_LINE_BYTES {
                if self.host {
                    self.reply_error(
                        None,
                        ErrorBody::new(ErrorCode::InvalidRequest, "line longer than 16 MiB"),
                    )
                    .await;
                    return ReadEnd::Eof;
                }
                return ReadEnd::Malformed(format!("a line over {MAX_LINE_BYTES} bytes"));
            }
            match Request::parse(line.trim_ascii_end()) {
                Ok(request) => self.handle(request).await,
                Err(ParseError::Invalid { id, message }) => {
                    self.reply_error(id, ErrorBody::new(ErrorCode::InvalidRequest, message))
                        .await;
                }
                Err(ParseError::Malformed(why)) if self.host => {
                    let message = format!("each line must be one JSON object: {why}");
                    self.reply_error(None, ErrorBody::new(ErrorCode::InvalidRequest, message))
                        .await;
                }
                Err(ParseError::Malformed(why)) => return ReadEnd::Malformed(why),
            }
        }
    }

    /// Ends everything the connection started: its awaits and its subscriptions.
    pub(crate) fn close(&self) {
        self.awaits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .abort_all();
        for id in self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            self.engine.unsubscribe(&id);
        }
    }

    /// Who a request acts for: the connection's own side, or — a
    /// service's request naming `process` — a run handed to this service.
    fn context_of(&self, process: Option<String>) -> Result<Context> {
        let Some(process) = process.filter(|p| self.ctx.process_id.as_ref() != Some(p)) else {
            return Ok(self.ctx.clone()); // its own side (naming itself is no different)
        };
        match &self.service {
            Some(service) if service.serves(&process) => Ok(Context::process(process)),
            _ => Err(EngineError::boundary(format!(
                "cannot act for `{process}`: it is not a run handed to this service"
            ))),
        }
    }

    async fn handle(self: &Arc<Self>, request: Request) {
        let id = request.id;
        let ctx = match self.context_of(request.process) {
            Ok(ctx) => ctx,
            Err(e) => {
                let _ = self.out.send(response_line::<()>(id, Err(e))).await;
                return;
            }
        };
        let line = match request.op {
            op @ (Op::Await { .. } | Op::Finish { .. } | Op::Service { .. }) => {
                self.answer_apart(id, ctx, op);
                return;
            }
            // Runs are answered on their own, so the runs a program starts
            // together (its parallel tool calls) start together: each
            // commits and forks, which a later request need not wait for.
            op @ Op::Run { .. } => {
                let me = Arc::clone(self);
                tokio::spawn(async move {
                    let answering = Arc::clone(&me);
                    let line =
                        tokio::task::spawn_blocking(move || answering.answer(id, &ctx, op)).await;
                    if let Ok(line) = line {
                        let _ = me.out.send(line).await;
                    }
                });
                return;
            }
            // Commits may wait on the writer lock: keep them off the worker's
            // queue. Everything else is a short synchronous call.
            op @ Op::Commit { .. } => blocking(|| self.answer(id, &ctx, op)),
            op => self.answer(id, &ctx, op),
        };
        let _ = self.out.send(line).await;
    }

    /// Answers a request that waits (`await`, `finish`, `service`) on a task
    /// of its own, ended with the connection.
    fn answer_apart(self: &Arc<Self>, id: u64, ctx: Context, op: Op) {
        let me = Arc::clone(self);
        let mut awaits = self.awaits.lock().unwrap_or_else(PoisonError::into_inner);
        awaits.spawn(async move {
            let engine = &me.engine;
            let line = match op {
                Op::Await { processes } => {
                    response_line(id, engine.await_processes(&ctx, &processes).await)
                }
                Op::Finish {
                    status,
                    error,
                    output,
                    body,
                } => {
                    let result = match status {
                        FinishStatus::Completed => Ok(()),
                        FinishStatus::Failed => Err(error.unwrap_or_else(|| "failed".into())),
                    };
                    let how = Finish {
                        result,
                        output,
                        body,
                    };
                    let done = engine.finish(&ctx, how).await;
                    response_line(id, done.map(|()| serde_json::json!({})))
                }
                Op::Service {
                    program,
                    timeout_ms,
                } => {
                    let started = engine.service(&ctx, &program, timeout_ms).await;
                    response_line(id, started.map(|process| RunResult { process }))
                }
                _ => response_line::<()>(id, Err(EngineError::internal("not a waiting request"))),
            };
            let _ = me.out.send(line).await;
        });
        // Reap finished ones so the set does not grow.
        while awaits.try_join_next().is_some() {}
    }

    fn answer(&self, id: u64, ctx: &Context, op: Op) -> String {
        let engine = &self.engine;
        match op {
            Op::Scope { scopes, opts } => response_line(id, engine.scope(ctx, &scopes, &opts)),
            Op::Commit { declaration } => response_line(id, engine.commit(ctx, declaration)),
            Op::Run { program, args } => response_line(
                id,
                engine
                    .run(ctx, &program, *args)
                    .map(|process| RunResult { process }),
            ),
            Op::Cancel { process } => response_line(
                id,
                engine.cancel(ctx, &process).map(|()| serde_json::json!({})),
            ),
            Op::Subscribe { scopes, opts } => {
                let sink = Sink::Lines(self.out.clone());
                let result = engine
                    .subscribe_to(ctx, &scopes, opts, sink)
                    .inspect(|sub| {
                        self.subscriptions
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(sub.clone());
                    });
                response_line(
                    id,
                    result.map(|subscription_id| SubscribeResult { subscription_id }),
                )
            }
            Op::Unsubscribe { subscription_id } => {
                let mine = {
                    let mut subs = self
                        .subscriptions
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    let found = subs.iter().position(|s| *s == subscription_id);
                    found.map(|i| subs.remove(i))
                };
                let result = match mine {
                    Some(sub) => {
                        engine.unsubscribe(&sub);
                        Ok(serde_json::json!({}))
                    }
                    None => Err(EngineError::not_found(format!(
                        "no subscription `{subscription_id}` on this connection"
                    ))),
                };
                response_line(id, result)
            }
            Op::Notify { data } => {
                let result = match &ctx.process_id {
                    Some(me) => engine.notify(me, data).map(|()| serde_json::json!({})),
                    None => Err(EngineError::invalid(
                        "notify is for programs: a host has no process to notify from",
                    )),
                };
                response_line(id, result)
            }
            Op::Ready {} => response_line(id, self.ready(ctx).map(|()| serde_json::json!({}))),
            Op::Await { .. } | Op::Finish { .. } | Op::Service { .. } => {
                response_line::<()>(id, Err(EngineError::internal("answered apart")))
            }
        }
    }

    /// A service's `ready`: its runs' events may come.
    fn ready(&self, ctx: &Context) -> Result<()> {
        match (&self.service, &ctx.process_id) {
            (Some(service), Some(me)) if *ctx == self.ctx => {
                service.ready(me, self.out.clone());
                Ok(())
            }
            _ => Err(EngineError::invalid(
                "ready is for service programs (runtime `service`), for themselves",
            )),
        }
    }

    async fn reply_error(&self, id: Option<u64>, error: ErrorBody) {
        let response = protocol::Response {
            id,
            outcome: protocol::Outcome::Error(error),
        };
        if let Ok(mut line) = serde_json::to_string(&response) {
            line.push('\n');
            let _ = self.out.send(line).await;
        }
    }
}

/// Writes queued lines to `output` until the queue closes or the output
/// fails, flushing once per burst.
pub(crate) async fn pump<W: tokio::io::AsyncWrite + Unpin>(
    mut queue: mpsc::Receiver<String>,
    mut output: W,
) {
    use tokio::io::AsyncWriteExt;
    while let Some(line) = queue.recv().await {
        if output.write_all(line.as_bytes()).await.is_err() {
            return;
        }
        while let Ok(more) = queue.try_recv() {
            if output.write_all(more.as_bytes()).await.is_err() {
                return;
            }
        }
        if output.flush().await.is_err() {
            return;
        }
    }
}

/// Runs a synchronous substrate call without stalling the runtime's other
/// tasks (on a multi-threaded runtime).
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// One response line, serialized straight from the result.
pub(crate) fn response_line<T: Serialize>(id: u64, result: Result<T>) -> String {
    let mut line = match result {
        Ok(value) => match serde_json::to_string(&value) {
            Ok(json) => format!("{{\"id\":{id},\"result\":{json}}}"),
            Err(e) => error_json(
                Some(id),
                ErrorBody::new(
                    ErrorCode::Internal,
                    format!("cannot encode the result: {e}"),
                ),
            ),
        },
        Err(e) => error_json(Some(id), e.into()),
    };
    line.push('\n');
    line
}

fn error_json(id: Option<u64>, error: ErrorBody) -> String {
    let response = protocol::Response {
        id,
        outcome: protocol::Outcome::Error(error),
    };
    serde_json::to_string(&response).unwrap_or_else(|_| {
        format!(
            "{{\"id\":{},\"error\":{{\"code\":\"INTERNAL\",\"message\":\"\"}}}}",
            id.unwrap_or(0)
        )
    })
}

/// Serves the protocol to a host over `input`/`output` with full reach —
/// what `hc serve --stdio` runs. Returns when the input ends.
pub(crate) async fn serve_host<O: Ops, R, W>(engine: O, ctx: Context, input: R, output: W)
where
    R: AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<String>(OUT_QUEUE);
    let writer = tokio::spawn(pump(out_rx, output));
    let connection = Arc::new(Connection::new(engine, ctx, out_tx, true, None));
    connection.serve(input).await;
    // Let in-flight awaits answer before the writer goes.
    let pending = std::mem::take(
        &mut *connection
            .awaits
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    pending.join_all().await;
    connection.close();
    drop(connection);
    let _ = writer.await;
}
