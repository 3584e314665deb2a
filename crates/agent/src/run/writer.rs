//! The run's voice: the only code that commits on its session (and on its
//! own process), and that tells hosts what it does. Commits keep their
//! order: one sent in the background is settled before the next is sent,
//! and every commit it makes or reads moves `as_of`, the commit the next
//! request is built from. A commit that fails because the store is away
//! (a database server restarting) is tried again with the same chunk ids,
//! each declared `create` so none is made twice; one that still fails ends
//! the run before anything built on it is recorded, so no request is ever
//! recorded that carried what the record lacks.

use crate::catalog;
use crate::contract::{Body, ContextBody, Entry, KNOWLEDGE_FILE, KnowledgeFile, Notice, RunTotals};
use crate::sources::knowledge::{Known, Pinned};
use protocol::{ChunkDecl, Client, ClientError, Declaration, NewPlacement, PlacementType};
use substrate::{Commit, PlacementDecl};
use tokio::task::JoinHandle;

/// Tells hosts what a run does (never stored).
#[derive(Clone)]
pub(crate) struct Notifier(Client);

impl Notifier {
    /// Sends `notice`.
    pub fn notify(&self, notice: &Notice) {
        self.0.notify_now(notice.to_value());
    }

    /// Tells what the run is doing.
    pub fn status(&self, text: impl Into<String>) {
        self.notify(&Notice::Status {
            text: text.into(),
            waiting: false,
        });
    }

    /// Tells that the run waits for a person.
    pub fn waiting(&self, text: impl Into<String>) {
        self.notify(&Notice::Status {
            text: text.into(),
            waiting: true,
        });
    }
}

/// Commits on a session, in order.
pub(crate) struct SessionWriter {
    client: Client,
    /// The run's process.
    me: String,
    session: String,
    /// The latest commit the run made or read.
    as_of: u64,
    /// A commit sent and not yet answered.
    in_flight: Option<JoinHandle<Result<Commit, ClientError>>>,
}

impl SessionWriter {
    /// A writer for run `me` on `session`, which it has read as of `as_of`.
    pub fn new(client: Client, me: String, session: String, as_of: u64) -> SessionWriter {
        SessionWriter {
            client,
            me,
            session,
            as_of,
            in_flight: None,
        }
    }

    /// The run's process.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The latest commit the run made or read.
    pub fn as_of(&self) -> u64 {
        self.as_of
    }

    /// What tells hosts what the run does.
    pub fn notifier(&self) -> Notifier {
        Notifier(self.client.clone())
    }

    /// Tells hosts something (never stored).
    pub fn notify(&self, notice: &Notice) {
        self.client.notify_now(notice.to_value());
    }

    /// Tells hosts what the run is doing.
    pub fn status(&self, text: impl Into<String>) {
        self.notifier().status(text);
    }

    /// Commits `entries` on the session (and the run's totals on its
    /// process), after any commit still in flight; answers the commit.
    pub async fn commit(
        &mut self,
        entries: Vec<Entry>,
        totals: Option<&RunTotals>,
    ) -> Result<Commit, ClientError> {
        self.settle().await?;
        let commit = self.send(entries, totals).await?;
        self.as_of = self.as_of.max(commit.id);
        Ok(commit)
    }

    /// Commits `entries` on the session with `beside` (chunks elsewhere:
    /// a block's new version) and the run's totals, in one commit.
    pub async fn commit_beside(
        &mut self,
        entries: Vec<Entry>,
        beside: Vec<ChunkDecl>,
        totals: Option<&RunTotals>,
    ) -> Result<Commit, ClientError> {
        self.settle().await?;
        let mut decls = self.decls(entries);
        decls.extend(beside);
        if let Some(totals) = totals {
            decls.push(ChunkDecl::with_id(&self.me).merge_body(to_value(totals)));
        }
        let commit = committed(&self.client, Declaration::of(decls)).await?;
        self.as_of = self.as_of.max(commit.id);
        Ok(commit)
    }

    /// The same, sent now and answered later: the run goes on (a tool
    /// runs, the next model call is made) while the engine commits.
    /// [`settle`](Self::settle) collects it. One still in flight is waited
    /// for by the new one before it is sent, so the session keeps their
    /// order and none goes unwatched; when the earlier one failed, the
    /// new one is not sent (the session would have a gap).
    /// `resumable` is merged on the run's process with them: whether the
    /// run could start again from the session as it will then be (a
    /// queued run whose engine is lost is re-queued only then).
    pub fn commit_in_background(&mut self, entries: Vec<Entry>, resumable: bool) {
        let earlier = self.in_flight.take();
        let mut decls = self.decls(entries);
        decls.push(ChunkDecl::with_id(&self.me).merge_body(serde_json::json!({
            "resumable": resumable
        })));
        let client = self.client.clone();
        let commit = async move { committed(&client, Declaration::of(decls)).await };
        self.in_flight = Some(tokio::spawn(async move {
            if let Some(earlier) = earlier {
                joined(earlier.await)?;
            }
            commit.await
        }));
    }

    /// Waits for a commit sent in the background, if any: an error when
    /// it was not recorded (the run must not go on as if it were).
    pub async fn settle(&mut self) -> Result<(), ClientError> {
        let Some(sending) = self.in_flight.take() else {
            return Ok(());
        };
        let commit = joined(sending.await)?;
        self.as_of = self.as_of.max(commit.id);
        Ok(())
    }

    /// The commit of `entries` on the session (and totals on the process).
    fn send(
        &self,
        entries: Vec<Entry>,
        totals: Option<&RunTotals>,
    ) -> impl Future<Output = Result<Commit, ClientError>> + Send + 'static {
        let mut decls = self.decls(entries);
        if let Some(totals) = totals {
            decls.push(ChunkDecl::with_id(&self.me).merge_body(to_value(totals)));
        }
        let client = self.client.clone();
        async move { committed(&client, Declaration::of(decls)).await }
    }

    /// The chunks of `entries` on the session.
    fn decls(&self, entries: Vec<Entry>) -> Vec<ChunkDecl> {
        entries
            .into_iter()
            .map(|entry| {
                // ids made here, so a commit tried again makes none twice
                ChunkDecl::with_id(substrate::ids::new_id("c"))
                    .create_only()
                    .body(entry.body)
                    .on(NewPlacement::instance(&self.session))
                    .on(NewPlacement::instance(entry.kind))
            })
            .collect()
    }

    /// Commits a context event for `context` pinning `pins` (each placed
    /// relates on it, in order), with the `knowledge-file` chunks of the
    /// `files` it read (an unchanged one changes nothing); answers the
    /// pinned scopes as of `context.as_of`, read as a rebuild reads them,
    /// beside `memory` (read already, at `context.memory_at`).
    pub async fn write_context(
        &mut self,
        context: &ContextBody,
        pins: &[String],
        files: &[KnowledgeFile],
        memory: Vec<Pinned>,
    ) -> Result<Known, ClientError> {
        self.settle().await?;
        let event = substrate::ids::new_id("c");
        let mut chunks: Vec<ChunkDecl> = files
            .iter()
            .map(|file| {
                ChunkDecl::with_id(file.id())
                    .body(to_value(file))
                    .on(NewPlacement::instance(KNOWLEDGE_FILE))
            })
            .collect();
        chunks.push(
            ChunkDecl::with_id(&event)
                .create_only()
                .body(to_value(&context.as_recorded()))
                .on(NewPlacement::instance(&self.session))
                .on(NewPlacement::instance(ContextBody::TYPE)),
        );
        let declaration = Declaration {
            chunks,
            placements: pins
                .iter()
                .map(|pin| PlacementDecl {
                    chunk: pin.clone(),
                    scope: event.clone(),
                    kind: PlacementType::Relates,
                    seq: None,
                })
                .collect(),
            ..Declaration::default()
        };
        let commit = committed(&self.client, declaration).await?;
        self.as_of = self.as_of.max(commit.id);
        Ok(Known {
            pinned: catalog::read_pinned(&self.client, pins, context.as_of).await?,
            memory,
            shell: None,
        })
    }

    /// Writes how the run ended on its process (its totals, why it
    /// stopped) with its answer, as any program's: what a parent agent
    /// reads as a sub-agent's result, and what a host shows.
    pub async fn finish(
        &mut self,
        totals: &RunTotals,
        output: protocol::program::Output,
        exit: i32,
    ) {
        if let Err(e) = self.settle().await {
            eprintln!("agent: a commit failed: {e}");
        }
        // The totals, the answer and the run's end in one commit, and the
        // awaiter answered before this process has exited.
        let body = to_value(totals);
        let error = (exit != 0).then(|| format!("exit code {exit}"));
        // (tried again while the store is away: an end not recorded leaves
        // the run without its outcome)
        let mut waits = RETRIES.iter();
        let ended = loop {
            let ended = (self.client)
                .finish_run(output.body(), body.clone(), error.clone())
                .await;
            match (&ended, waits.next()) {
                (Err(e), Some(ms)) if e.code() == Some(protocol::ErrorCode::Internal) => {
                    tokio::time::sleep(std::time::Duration::from_millis(*ms)).await;
                }
                _ => break ended,
            }
        };
        let Err(why) = ended else {
            return;
        };
        eprintln!("agent: cannot end the run in one commit ({why}); recording it apart");
        let done = self
            .client
            .commit(Declaration::of(vec![
                ChunkDecl::with_id(&self.me).merge_body(to_value(totals)),
                ChunkDecl::generated()
                    .body(output.body())
                    .on(NewPlacement::instance(&self.me))
                    .on(NewPlacement::instance("engine/output")),
            ]))
            .await;
        if let Err(e) = done {
            eprintln!("agent: cannot record how the run ended: {e}");
        }
    }
}

fn to_value(body: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(body).unwrap_or_default()
}

/// A background commit's outcome: the commit, or why it was not made.
fn joined(
    sent: Result<Result<Commit, ClientError>, tokio::task::JoinError>,
) -> Result<Commit, ClientError> {
    sent.unwrap_or_else(|e| Err(ClientError::Decode(format!("a commit was lost: {e}"))))
}

/// How long a commit is tried again while the store is away: about eight
/// seconds in all, the time a database server takes to restart.
const RETRIES: [u64; 7] = [100, 200, 400, 800, 1500, 2000, 3000];

/// Commits `declaration`, trying again while the engine says its store
/// failed (`INTERNAL`: nothing was written). Any other answer — a rule
/// broken, the run fenced — is final at once.
async fn committed(client: &Client, declaration: Declaration) -> Result<Commit, ClientError> {
    let mut waits = RETRIES.iter();
    loop {
        match client.commit(declaration.clone()).await {
            Err(e) if e.code() == Some(protocol::ErrorCode::Internal) => match waits.next() {
                Some(ms) => tokio::time::sleep(std::time::Duration::from_millis(*ms)).await,
                None => return Err(e),
            },
            outcome => return outcome,
        }
    }
}
