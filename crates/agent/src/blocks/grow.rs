//! How a block grows. `write` puts text at a node (making the nodes on
//! the way, a leaf that gains a child keeping its text as `_`; on a branch
//! only `_` changes). An **entry** goes at the next free digit 1–9 under a
//! node; when the node is full its entries stay, the node is left behind
//! to be **compressed** (a summary of its nine into its own `_`), and the
//! digits start again under its next sibling — up the tree as far as
//! needed, and at a full root the block grows upward (the old tree becomes
//! child `0` of a new root, `decimal` one more, so every pscale stays what
//! it was). Growth refuses only past the most levels a block may have
//! ([`MAX_DECIMAL`]): [`Block::entry_fits`] says so before an entry.

use super::{Block, MAX_DECIMAL, MAX_NODE_CHARS, Node, Path, dotted};
use std::fmt;

/// Why a write was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The root of a rendition block is its definition.
    RenditionRoot,
    /// More text than a node holds.
    TooLong {
        /// Characters given.
        chars: usize,
    },
    /// An entry that would grow the block past [`MAX_DECIMAL`].
    TooTall,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::RenditionRoot => write!(
                f,
                "the root of a rendition block (decimal 0) is its definition and is not \
                 written; write under it (`1`, `2.3`, …)"
            ),
            WriteError::TooLong { chars } => write!(
                f,
                "the content is {chars} characters; a node holds at most {MAX_NODE_CHARS} — \
                 split it over several nodes (children `1`–`9`)"
            ),
            WriteError::TooTall => write!(
                f,
                "every node from there up to the root is full, and the entry would grow the \
                 block past decimal {MAX_DECIMAL}, the most levels above pscale 0 a block has; \
                 put it under another node (`path`), or in another block"
            ),
        }
    }
}

/// Where an entry went, and what it left behind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placed {
    /// The entry's path.
    pub entry: Path,
    /// Nodes it found full and moved past, deepest first: each to be
    /// compressed now (their paths as they are after any upward growth).
    pub left: Vec<Path>,
    /// Whether the block grew upward.
    pub grew: bool,
}

/// Refuses text longer than a node holds.
pub fn check_content(content: &str) -> Result<(), WriteError> {
    let chars = content.chars().count();
    match chars > MAX_NODE_CHARS {
        true => Err(WriteError::TooLong { chars }),
        false => Ok(()),
    }
}

impl Block {
    /// Writes `content` at `path`: made when missing (with the nodes on
    /// the way), a leaf's text replaced, a branch's `_` set.
    pub fn write(&mut self, path: &[u8], content: &str) -> Result<(), WriteError> {
        check_content(content)?;
        if path.is_empty() && self.is_rendition() {
            return Err(WriteError::RenditionRoot);
        }
        let node = self.node_mut(path);
        match node {
            Node::Branch(b) if b.children.iter().any(Option::is_some) => {
                b.text = Some(content.to_owned())
            }
            other => *other = Node::Leaf(content.to_owned()),
        }
        Ok(())
    }

    /// The node at `path`, made (as an empty branch) where missing.
    pub fn node_mut(&mut self, path: &[u8]) -> &mut Node {
        let mut node = &mut self.tree;
        for d in path {
            let slot = &mut node.branch_mut().children[usize::from(*d)];
            node = slot.get_or_insert_with(Node::default);
        }
        node
    }

    /// The first free digit 1–9 under `path`.
    pub fn free_digit(&self, path: &[u8]) -> Option<u8> {
        let node = self.tree.at(path);
        (1..=9).find(|d| node.and_then(|n| n.child(*d)).is_none())
    }

    /// Whether an entry under `at` fits: refused when it would grow the
    /// block upward past [`MAX_DECIMAL`] (which no reader of blocks takes).
    pub fn entry_fits(&self, at: &[u8]) -> Result<(), WriteError> {
        if self.decimal < MAX_DECIMAL {
            return Ok(());
        }
        let mut trial = self.clone();
        match trial.add_entry(at, "").grew {
            true => Err(WriteError::TooTall),
            false => Ok(()),
        }
    }

    /// Puts `entry` at the next free digit 1–9 under `at` — past full
    /// nodes to their next siblings, growing the block upward at a full
    /// root. Never refuses (an entry longer than a node holds is cut).
    pub fn add_entry(&mut self, at: &[u8], entry: &str) -> Placed {
        let entry: String = entry.chars().take(MAX_NODE_CHARS).collect();
        let mut node = at.to_vec();
        let mut placed = Placed::default();
        loop {
            if let Some(d) = self.free_digit(&node) {
                node.push(d);
                *self.node_mut(&node) = Node::Leaf(entry);
                placed.entry = node;
                return placed;
            }
            let grown = placed.grew;
            let mut depth = node.len();
            placed.left.push(node.clone());
            node = self.next_sibling(node, &mut placed);
            if placed.grew && !grown {
                depth += 1;
            }
            // down again to the depth entries were going in, along `0`
            node.resize(depth, 0);
        }
    }

    /// The next free sibling of the full node `path`: after it under its
    /// parent, or — the parent full too — its parent's next sibling, up to
    /// the root, which grows upward.
    fn next_sibling(&mut self, mut path: Path, placed: &mut Placed) -> Path {
        loop {
            let Some(last) = path.pop() else {
                self.grow_up(placed);
                return vec![1];
            };
            let parent = self.tree.at(&path);
            let free = (last + 1..=9).find(|d| parent.and_then(|p| p.child(*d)).is_none());
            if let Some(d) = free {
                path.push(d);
                return path;
            }
            placed.left.push(path.clone());
        }
    }

    /// The old tree becomes child `0` of a new root; `decimal` one more.
    fn grow_up(&mut self, placed: &mut Placed) {
        let old = std::mem::take(&mut self.tree);
        self.tree.branch_mut().children[0] = Some(old);
        self.decimal += 1;
        placed.grew = true;
        for left in &mut placed.left {
            left.insert(0, 0);
        }
        for pending in &mut self.pending {
            *pending = if pending.is_empty() {
                "0".to_owned()
            } else {
                format!("0.{pending}")
            };
        }
    }

    /// What a compression of `path` summarizes: the text of each of its
    /// children, by digit.
    pub fn entries_of(&self, path: &[u8]) -> Vec<(u8, String)> {
        self.tree
            .at(path)
            .map(|n| {
                n.children()
                    .map(|(d, c)| (d, c.text().to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Puts a compression's summary in `path`'s `_` (its entries stay).
    pub fn set_summary(&mut self, path: &[u8], summary: &str) {
        let summary: String = summary.chars().take(MAX_NODE_CHARS).collect();
        self.node_mut(path).branch_mut().text = Some(summary);
        let key = dotted(path);
        self.pending.retain(|p| *p != key);
    }

    /// Remembers that `path` waits for its compression.
    pub fn defer(&mut self, path: &[u8]) {
        let key = dotted(path);
        if !self.pending.contains(&key) {
            self.pending.push(key);
        }
    }
}

/// The prompt of a compression call: the node's entries, to be summarized
/// into one text that can stand for them one level up.
pub fn compression_prompt(block: &Block, path: &[u8]) -> String {
    let at = if path.is_empty() {
        "its root".to_owned()
    } else {
        format!("node `{}`", dotted(path))
    };
    let mut prompt = format!(
        "These are the entries under {at} of the pscale block `{}` (pscale {} each). Write \
         one short passage — at most a few sentences — that stands for all of them one level \
         up: what they hold together, the facts worth keeping, in the order they happened. \
         Answer with the passage alone.\n",
        block.name,
        block.pscale(path.len() + 1)
    );
    for (d, text) in block.entries_of(path) {
        prompt.push_str(&format!("\n{d}: {text}"));
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_write_makes_the_way_and_keeps_a_leafs_text() {
        let mut block = Block::new("stash", 1, "things made");
        block.write(&[0, 3, 2], "a note").unwrap();
        assert_eq!(
            block.tree.to_value(),
            json!({"0": {"_": "things made", "3": {"2": "a note"}}})
        );
        block.write(&[0, 3], "ideas").unwrap();
        block.write(&[0, 3, 2], "a better note").unwrap();
        assert_eq!(
            block.tree.at(&[0, 3]).unwrap().to_value(),
            json!({"_": "ideas", "2": "a better note"})
        );
    }

    #[test]
    fn a_rendition_root_and_long_text_are_refused() {
        let mut keystone = Block::new("keystone", 0, "the format");
        assert_eq!(keystone.write(&[], "x"), Err(WriteError::RenditionRoot));
        let long = "y".repeat(MAX_NODE_CHARS + 1);
        assert_eq!(
            keystone.write(&[1], &long),
            Err(WriteError::TooLong {
                chars: MAX_NODE_CHARS + 1
            })
        );
        assert!(keystone.tree.at(&[1]).is_none(), "nothing written");
    }

    #[test]
    fn entries_fill_nine_then_move_to_the_next_sibling() {
        let mut history = Block::new("history", 1, "what happened");
        for n in 1..=9 {
            let placed = history.add_entry(&[0], &format!("e{n}"));
            assert_eq!(placed.entry, vec![0, n]);
            assert!(placed.left.is_empty());
        }
        let tenth = history.add_entry(&[0], "e10");
        assert_eq!(tenth.entry, vec![1, 1]);
        assert_eq!(tenth.left, vec![vec![0]]);
        assert_eq!(history.live_edge(), vec![1]);
        let eleventh = history.add_entry(&history.live_edge(), "e11");
        assert_eq!(eleventh.entry, vec![1, 2]);
    }

    #[test]
    fn a_full_root_grows_upward_keeping_every_pscale() {
        let mut history = Block::new("history", 1, "what happened");
        for n in 0..90 {
            let edge = history.live_edge();
            history.add_entry(&edge, &format!("e{n}"));
        }
        assert_eq!(history.tree.at(&[9, 9]).unwrap().text(), "e89");
        let pscale_before = history.pscale(2);
        let edge = history.live_edge();
        let placed = history.add_entry(&edge, "e90");
        assert!(placed.grew);
        assert_eq!(history.decimal, 2);
        assert_eq!(placed.left, vec![vec![0, 9], vec![0]]);
        assert_eq!(placed.entry, vec![1, 0, 1]);
        assert_eq!(history.tree.at(&[0, 9, 9]).unwrap().text(), "e89");
        assert_eq!(history.pscale(3), pscale_before, "an entry's pscale holds");
        assert_eq!(history.live_edge(), vec![1, 0]);
    }

    #[test]
    fn an_entry_that_would_grow_a_block_past_decimal_9_does_not_fit() {
        let mut tall = Block::new("tall", MAX_DECIMAL, "tall");
        for n in 1..=9 {
            assert_eq!(tall.entry_fits(&[9]), Ok(()));
            tall.add_entry(&[9], &format!("e{n}"));
        }
        assert_eq!(tall.entry_fits(&[9]), Err(WriteError::TooTall));
        assert_eq!(tall.entry_fits(&tall.live_edge()), Ok(()), "room elsewhere");
        let low = Block::new("low", MAX_DECIMAL - 1, "low");
        assert_eq!(low.entry_fits(&[]), Ok(()), "one level to grow");
    }

    #[test]
    fn a_summary_goes_in_the_nodes_own_text() {
        let mut history = Block::new("history", 1, "what happened");
        for n in 1..=10 {
            let edge = history.live_edge();
            history.add_entry(&edge, &format!("e{n}"));
        }
        let prompt = compression_prompt(&history, &[0]);
        assert!(prompt.contains("\n1: e1") && prompt.contains("\n9: e9"));
        assert!(!prompt.contains("e10"));
        history.defer(&[0]);
        assert_eq!(history.pending, vec!["0"]);
        history.set_summary(&[0], "nine things");
        assert_eq!(history.tree.at(&[0]).unwrap().text(), "nine things");
        assert_eq!(
            history.tree.at(&[0, 9]).unwrap().text(),
            "e9",
            "entries stay"
        );
        assert!(history.pending.is_empty());
    }
}
