//! `hc attach ID`: a session followed live wherever its run runs — a
//! worker's background run, another terminal's — shown as `hc run` shows
//! a run (what it did so far first), its questions put to the person here
//! (whoever answers first, here or elsewhere, answers); Ctrl-C detaches
//! and leaves the run going. The terminal is told when the run ends or
//! waits for an answer.

use crate::style::shown;
use crate::term::answerer::TerminalAnswerer;
use crate::term::text::TextSink;
use anyhow::{Result, anyhow};
use hc_host::follow::{Answerer, Answering, Asked, Follower, Outcome, Question};
use hc_host::open::{Find, Staged};
use std::sync::Arc;

/// The terminal's answerer, with Ctrl-C detaching instead of
/// interrupting: a Ctrl-C at a question is said, not acted on.
struct Detaching {
    inner: TerminalAnswerer,
    detach: Arc<tokio::sync::Notify>,
}

impl Answerer for Detaching {
    fn takes_questions(&self) -> bool {
        self.inner.takes_questions()
    }

    fn answer<'a>(&'a self, asked: Asked<'a>, question: Question) -> Answering<'a> {
        Box::pin(async move {
            let outcome = self.inner.answer(asked, question).await;
            if let Outcome::CtrlC = outcome {
                self.detach.notify_one();
            }
            Outcome::Done
        })
    }
}

/// `hc attach SESSION`.
pub fn attach(given: &str) -> Result<u8> {
    let (interactive, ask) = crate::tty::person();
    let staged = Staged::here(Find::Existing, ask)?;
    let prepared = staged.prepare(false)?;
    let session = hc_host::sessions::resolve(&prepared.db, given)?;
    let row = hc_host::agents::rows(&prepared.db)?
        .into_iter()
        .find(|r| r.id == session)
        .ok_or_else(|| anyhow!("no session `{given}`"))?;
    let Some(process) = row.process.clone() else {
        println!("{session} has no run yet");
        return Ok(0);
    };
    crate::runtime()?.block_on(async move {
        let host = prepared.open()?;
        let engine = host.engine.clone();
        let (sub, events) = hc_host::turn::subscribe(&engine, &session)?;
        let place = match (&row.branch, &row.host) {
            (Some(b), Some(h)) => format!(" ({} on {})", shown(b), shown(h)),
            (Some(b), None) => format!(" ({})", shown(b)),
            _ => String::new(),
        };
        eprintln!(
            "hc: attached to {session}{place}: {}; Ctrl-C detaches (the run goes on)",
            shown(&row.title)
        );
        let mut sink = TextSink::following(engine.clone());
        let detach = Arc::new(tokio::sync::Notify::new());
        let answerer = Detaching {
            inner: TerminalAnswerer { interactive },
            detach: Arc::clone(&detach),
        };
        // from the first commit: what the run did so far, then live
        let mut follower = Follower::new(engine.clone(), session.clone(), 0, &mut sink, &answerer);
        let followed = async {
            follower.replay(&sub, &process).await;
            follower.follow(events, &sub, &process).await
        };
        let ended = tokio::select! {
            done = followed => Some(done),
            _ = tokio::signal::ctrl_c() => None,
            () = detach.notified() => None,
        };
        engine.unsubscribe(&sub);
        host.close().await;
        let Some(done) = ended else {
            eprintln!("\nhc: detached from {session}; it goes on (`hc attach {session}` again)");
            return Ok(0);
        };
        let done = done?;
        let body = done
            .scopes
            .first()
            .map(|s| agent::contract::RunBody::parse(&s.body_value()))
            .unwrap_or_default();
        let now = hc_host::agents::rows(host.engine.db())?
            .into_iter()
            .find(|r| r.id == session);
        if let Some(now) = &now {
            crate::notify::changed(now);
        }
        eprintln!("hc: {session} {}", body.status());
        Ok(body.exit_code())
    })
}
