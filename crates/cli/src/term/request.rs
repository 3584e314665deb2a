//! What `hc run` was asked — the prompt, the flags, the session, Claude
//! Code's print-mode flags, `--bg` — and the checks of flags that mean
//! something only beside others. Read by `run.rs`, which runs it, and by
//! `background.rs`, which queues it.

use crate::args::RunFlags;
use crate::exit::exit;
use crate::print::Printed;
use crate::sessions::Choice;
use crate::settings::Flags;
use anyhow::Result;

/// What `--bg` asks beside the run.
#[derive(Clone, Debug)]
pub struct Background {
    /// `--base REF`: the commit its worktree starts from.
    pub base: Option<String>,
    /// Whether it works in a worktree of its own (not `--no-worktree`).
    pub worktree: bool,
    /// `--labels`: what a worker must carry to take it.
    pub labels: Vec<String>,
    /// `--retry`: `turn` or `off` (none: the configuration's).
    pub retry: Option<String>,
}

/// What `hc run` was asked.
#[derive(Clone)]
pub struct RunRequest {
    /// The prompt (`None`: read it from stdin).
    pub prompt: Option<String>,
    /// Settings given as flags.
    pub flags: Flags,
    /// `--no-contain`.
    pub no_contain: bool,
    /// `--context ID`: scopes to pin.
    pub context: Vec<String>,
    /// `--image FILE`: images sent with the prompt.
    pub images: Vec<std::path::PathBuf>,
    /// Which session the run goes on.
    pub session: Choice,
    /// `--compact`: summarize the session before going on.
    pub compact: bool,
    /// Claude Code's print-mode flags.
    pub sdk: crate::compat::SdkFlags,
    /// `--bg`: queued for a worker instead of run here.
    pub background: Option<Background>,
    /// `--checkout`: a session's files checked out where its last run on
    /// another host left them.
    pub checkout: bool,
    /// The id the driving program gave this turn's prompt (the SDK's
    /// user message `uuid`).
    pub prompt_uuid: Option<String>,
}

impl RunRequest {
    /// Flags that mean something only beside others (`--checkout` with
    /// `--resume`, `--include-partial-messages` with stream-json output…):
    /// one given without them is a usage error, never taken and ignored.
    pub fn check_flags(&self, printed: &Printed) -> Result<()> {
        let resumed = self.session != crate::sessions::Choice::New;
        let streaming = self.sdk.streaming();
        let stream_out = printed.format == crate::print::OutputFormat::StreamJson;
        let refusals = [
            (
                self.checkout && !resumed,
                "--checkout goes with --resume or --continue: it checks out where that session's files are",
            ),
            (
                self.sdk.fork_session && !resumed,
                "--fork-session goes with --resume or --continue: it forks the session they name",
            ),
            (
                self.compact && !resumed,
                "--compact goes with --resume or --continue: it compacts the session they name before going on",
            ),
            (
                self.sdk.session_id.is_some() && resumed,
                "--session-id names a new session; the session --resume or --continue goes on with keeps its name",
            ),
            (
                self.sdk.await_initialize && !streaming,
                "--await-initialize goes with --input-format stream-json: the initialize request is its first line",
            ),
            (
                printed.partial && !stream_out,
                "--include-partial-messages goes with --output-format stream-json: the deltas are stream_event lines",
            ),
            (
                self.sdk.replay_user_messages && !stream_out,
                "--replay-user-messages goes with --output-format stream-json: the echoes are lines of it",
            ),
            (
                self.sdk.prompts_over_stdio() && !streaming,
                "--permission-prompt-tool stdio asks the program that drives hc over stdin: give it with --input-format stream-json",
            ),
            (
                streaming && self.background.is_some(),
                "--bg queues one prompt for a worker; it does not take --input-format stream-json",
            ),
            (
                streaming && self.prompt.is_some(),
                "with --input-format stream-json the prompts come on stdin as user messages: leave out the prompt argument",
            ),
        ];
        match refusals.into_iter().find(|(refused, _)| *refused) {
            Some((_, why)) => Err(exit(2, why)),
            None => Ok(()),
        }
    }

    /// `--settings`, added to the flags (before they are resolved): a
    /// setting hermitcrab does not apply is a usage error.
    pub fn apply_settings(&mut self) -> Result<()> {
        if let Some(given) = self.sdk.settings.clone() {
            crate::claude_settings::apply(&given, &mut self.flags).map_err(|e| exit(2, e))?;
        }
        Ok(())
    }

    /// What `hc run`'s flags ask: the run, and how it is printed.
    pub fn from_flags(this: RunFlags) -> (RunRequest, Printed) {
        let printed = Printed {
            format: this.output_format,
            partial: this.include_partial_messages,
            verbose: this.sdk.verbose,
        };
        let request = RunRequest {
            prompt: this.prompt,
            flags: this.settings.into_flags(),
            no_contain: this.no_contain,
            context: this.context,
            images: this.images,
            compact: this.compact,
            sdk: this.sdk,
            background: this.bg.then_some(Background {
                base: this.base,
                worktree: !this.no_worktree,
                labels: this.labels,
                retry: this.retry,
            }),
            checkout: this.checkout,
            prompt_uuid: None,
            session: match (this.continue_, this.resume) {
                (true, _) => crate::sessions::Choice::Latest,
                (false, Some(id)) => crate::sessions::Choice::Resume(id),
                (false, None) => crate::sessions::Choice::New,
            },
        };
        (request, printed)
    }
}
