//! The hermitcrab preset's part of a run: at the start, its identity's six
//! blocks seeded when missing and capabilities written from the tools the
//! run really has (one commit, only when something changed), then the
//! shell read at one commit the context event names; after every answer
//! with text, the exchange saved to history by the kernel — with the
//! compressions it needs — as one commit beside a `block-save` on the
//! session.

use super::Run;
use super::side::Side;
use crate::blocks::crab::{self, Crab, Operable};
use crate::blocks::store::BlockStore;
use crate::blocks::{Block, dotted};
use crate::catalog::ProgramTool;
use crate::config::AgentConfig;
use crate::contract::{BlockSave, Entry, SessionItem, ShellRecord};
use protocol::{Client, ClientError};
use substrate::ChunkItem;

/// The most characters of a prompt, and of an answer, one history entry
/// keeps.
const PROMPT_CHARS: usize = 1000;
const ANSWER_CHARS: usize = 8000;

/// What this run can operate, for its capabilities block.
pub(super) fn operable(config: &AgentConfig, tools: &[ProgramTool]) -> Operable {
    let has = |name: &str| tools.iter().any(|t| t.def.name == name);
    let mut delegation = vec!["call_llm".to_owned()];
    if has(crate::toolbox::SUB_AGENT) {
        delegation.push(crate::toolbox::SUB_AGENT.to_owned());
    }
    Operable {
        server: config
            .server_tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect(),
        blocks: crate::toolbox::blocks::TOOLS
            .iter()
            .filter(|t| **t != "call_llm")
            .map(|t| (*t).to_owned())
            .collect(),
        programs: tools
            .iter()
            .filter(|t| t.def.name != crate::toolbox::SUB_AGENT)
            .map(|t| (t.def.name.clone(), t.def.description.clone()))
            .collect(),
        delegation,
    }
}

/// Seeds what is missing, writes capabilities when they changed, and
/// reads the shell back at one commit; answers it with its record.
pub(super) async fn prepare(
    client: &Client,
    config: &AgentConfig,
    have: &Operable,
    history: &[ChunkItem],
) -> Result<(Crab, ShellRecord), ClientError> {
    let store = BlockStore::new(client.clone(), config.identity());
    let (stored, _) = store.all(None).await?;
    let has = |name: &str| stored.iter().any(|s| s.name == name);
    let mut write: Vec<Block> = crab::seeds()
        .into_iter()
        .filter(|b| !has(&b.name))
        .collect();
    let capabilities = crab::capabilities(have);
    let current = stored.iter().find(|s| s.name == "capabilities");
    if current.is_none_or(|s| s.block.as_ref().ok() != Some(&capabilities)) {
        write.push(capabilities);
    }
    if !write.is_empty() {
        store.put(&write.iter().collect::<Vec<_>>()).await?;
    }
    let (blocks, at) = store.all(None).await?;
    let constitution = store.constitution(Some(at)).await?;
    let boot = !history.iter().any(
        |c| matches!(SessionItem::of(c), SessionItem::Context(Some(body)) if body.shell.is_some()),
    );
    let shell = Crab {
        constitution,
        blocks: blocks.into_iter().filter_map(|s| s.block.ok()).collect(),
    };
    let record = ShellRecord {
        identity: config.identity().to_owned(),
        at,
        boot,
    };
    Ok((shell, record))
}

/// A stored block read as history (the seed when there is none yet).
type Read = Result<Option<Result<Block, crate::blocks::TreeError>>, ClientError>;

/// History being read in the background.
pub(super) type HistoryRead = tokio::task::JoinHandle<Read>;

fn history_of(read: Read) -> Result<Block, String> {
    match read {
        Ok(Some(Ok(block))) => Ok(block),
        Ok(Some(Err(invalid))) => Err(format!("the block is not valid ({invalid})")),
        Ok(None) => crab::seeds()
            .into_iter()
            .find(|b| b.name == "history")
            .ok_or_else(|| "there is no history block".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// A text cut to `max` characters.
fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.chars().count() > max {
        true => format!("{}…", text.chars().take(max).collect::<String>()),
        false => text.to_owned(),
    }
}

impl Run {
    /// Commits `answer` with its exchange saved to history — `[time]
    /// prompt → answer` at the next free digit under the live edge — in
    /// the answer's own commit. When the entry fills a node (or an earlier
    /// compression waits), the answer goes first and the compressions and
    /// the save follow in one commit. A save that cannot be made is a
    /// status line; the answer is recorded all the same.
    pub(super) async fn record_saving(
        &mut self,
        answer: Entry,
        text: &str,
    ) -> Result<(), ClientError> {
        let store = BlockStore::new(self.client.clone(), self.config.identity());
        let read = match self.history_read.take() {
            Some(prefetched) => prefetched.await.unwrap_or(Err(ClientError::Closed)),
            None => store.get("history").await,
        };
        let history = match history_of(read) {
            Ok(history) => history,
            Err(why) => {
                self.writer.status(format!("history is not saved: {why}"));
                return self.record(answer, true).await.map(|_| ());
            }
        };
        let prompt = self.prompt.as_deref().unwrap_or_default();
        let entry = format!(
            "[{}] {} → {}",
            crate::contract::now(),
            cut(prompt, PROMPT_CHARS),
            cut(text, ANSWER_CHARS)
        );
        let at = history.live_edge();
        let mut saved = history.clone();
        let placed = saved.add_entry(&at, &entry);
        if placed.left.is_empty() && saved.pending.is_empty() {
            let save = BlockSave {
                block: saved.name.clone(),
                path: dotted(&placed.entry),
                text: entry,
                ..BlockSave::default()
            };
            let totals = self.gates.totals();
            self.writer
                .commit_beside(
                    vec![answer.clone(), Entry::of(&save)],
                    vec![store.chunk(&saved)],
                    Some(&totals),
                )
                .await?;
            self.request.push(&answer.item());
            return Ok(());
        }
        self.record(answer, true).await?;
        self.save_compressing(&store, history, &at, entry).await;
        Ok(())
    }

    /// Starts reading history while the model answers: the save then
    /// waits for no read. (Every write this run makes to history — its
    /// block tools, its last save — is committed before the call starts.)
    pub(super) fn prefetch_history(&mut self) {
        if !self.config.hermitcrab {
            return;
        }
        let store = BlockStore::new(self.client.clone(), self.config.identity());
        self.history_read = Some(tokio::spawn(async move { store.get("history").await }));
    }

    /// The slow save: the compressions it needs (each a recorded call),
    /// then the block and its `block-save` in one commit.
    async fn save_compressing(
        &mut self,
        store: &BlockStore,
        mut history: Block,
        at: &[u8],
        entry: String,
    ) {
        let fast = self.config.fast_model().to_owned();
        let mut side = Side {
            provider: &self.provider,
            writer: &mut self.writer,
            gates: &mut self.gates,
            fast_model: &fast,
        };
        let added = side.add_entry(&mut history, at, &entry).await;
        let saved = BlockSave {
            block: history.name.clone(),
            path: dotted(&added.placed.entry),
            text: entry,
            compressed: added.compressed,
            deferred: added.deferred,
            grew: added.placed.grew,
        };
        let done = self
            .writer
            .commit_beside(vec![Entry::of(&saved)], vec![store.chunk(&history)], None)
            .await;
        if let Err(e) = done {
            self.writer.status(format!("history is not saved: {e}"));
        }
    }
}
