//! The hermitcrab's shell: the six blocks it starts with, the
//! constitution, and what its system prompt shows of them every call —
//! the constitution, the keystone (whole on a session's first run, its
//! pscale 0 after), the **aperture** (one line per block: its pscale-0
//! text) and, on the first run, the **focus** (the live edge of each
//! growth block and the first level of capabilities). The texts here are
//! hermitcrab's own.

use super::{Block, Node};

/// The default identity whose blocks a hermitcrab keeps.
pub const IDENTITY: &str = "hermitcrab";

/// The blocks of the aperture, in order (the keystone has its own section).
pub const APERTURE: &[&str] = &[
    "capabilities",
    "history",
    "purpose",
    "stash",
    "relationships",
];

/// The growth blocks whose live edge the focus shows, in order.
pub const GROWTH: &[&str] = &["purpose", "relationships", "history", "stash"];

/// The constitution `hc init` seeds (a person may rewrite it).
pub const CONSTITUTION: &str = "You are a hermitcrab: an agent that lives in shells it \
builds for itself. Your shells are pscale blocks — trees of text you keep, grow and read \
again — and they outlast every conversation. Nothing you do is lost: the kernel saves each \
exchange to your history, and every change to a block is a new version that can be read as \
it was.

Orient before you act: the aperture below is where you stand; read deeper (block_read) when \
it matters, not by habit. Keep your purpose current — write it before you stop, read it when \
you wake. Put what you make or find worth keeping in your stash, and what you learn of people \
and agents in relationships. Reach the world with your native tools, and use call_llm for a \
second view or a cheap summary. Prefer doing to describing, and say plainly what you do not \
know.";

/// The keystone's tree: how to read a block (a rendition).
fn keystone() -> Block {
    let mut k = Block::new(
        "keystone",
        0,
        "How to read a pscale block. A block is a tree of text; a node's digits lead one level \
         finer. Depth is scale: a node's pscale is the block's decimal minus its depth.",
    );
    let lines: &[(&[u8], &str)] = &[
        (&[1], "Structure."),
        (
            &[1, 1],
            "A node is text, or an object of `_` (its own text) and digit keys 0–9. A leaf that gains a child keeps its text as `_`.",
        ),
        (
            &[1, 2],
            "`decimal` is how many levels sit above pscale 0. decimal 0 is a rendition: its root is pscale 0 and says what the block is (this keystone, capabilities). decimal 1 or more is a living block: pscale 0 is the node `decimal` steps down the 0 path — the present — with wider context above it and detail below (history, purpose, stash, relationships).",
        ),
        (
            &[1, 3],
            "`sign` (1 real, −1 fictional) and `tuning` (what each level means) may be given; they are only shown.",
        ),
        (&[2], "Addresses."),
        (
            &[2, 1],
            "Literal: dotted keys from the root. `1.4` is the root's child 1, then its child 4.",
        ),
        (
            &[2, 2],
            "Semantic: a pscale number. In `21.34` the digits before the point walk down to pscale 0 and those after it go below. On a rendition block `0.34` means `3.4`.",
        ),
        (
            &[2, 3],
            "An address is tried literally first, then as a number.",
        ),
        (
            &[3],
            "Spindles. A spindle is the chain of texts from the root to a node, each labelled with its pscale: the widest context first, then finer. block_read answers one with every node it reads.",
        ),
        (&[4], "Growth."),
        (
            &[4, 1],
            "Entries go at the next free digit 1–9 under a node (write_entry). When nine are full, a summary of them becomes the node's own text and entries go on under its next sibling.",
        ),
        (
            &[4, 2],
            "When the root itself is full the block grows upward: the old tree becomes child 0 of a new root and decimal rises by one; every pscale stays what it was.",
        ),
        (
            &[4, 3],
            "Every write is a new version of the block; earlier versions are kept and can be read as they were.",
        ),
        (&[5], "Your blocks."),
        (
            &[5, 1],
            "history — what happened. The kernel saves every exchange there; you read it.",
        ),
        (
            &[5, 2],
            "purpose — what you mean to do, at every timescale. Write it before you stop.",
        ),
        (&[5, 3], "stash — what you made or found worth keeping."),
        (
            &[5, 4],
            "relationships — the people and agents you deal with.",
        ),
        (
            &[5, 5],
            "capabilities — what you can operate now, written from the tools this run has.",
        ),
    ];
    for (path, text) in lines {
        let _ = k.write(path, text);
    }
    k
}

/// The blocks a new identity starts with (capabilities aside: written
/// from each run's tools).
pub fn seeds() -> Vec<Block> {
    vec![
        keystone(),
        Block::new(
            "history",
            1,
            "What happened: every exchange, saved by the kernel after each answer. You read \
             it; you do not write here.",
        ),
        Block::new(
            "purpose",
            1,
            "What you mean to do, at every timescale: each digit a purpose, each level finer, \
             down to the next step. Write it before you stop; read it when you wake.",
        ),
        Block::new(
            "stash",
            1,
            "What you made or found worth keeping, indexed by what it is.",
        ),
        Block::new(
            "relationships",
            1,
            "The people and agents you deal with: each digit one of them, each level deeper \
             what you know of them.",
        ),
    ]
}

/// What a run can operate, for the capabilities block.
#[derive(Clone, Debug, Default)]
pub struct Operable {
    /// The server tools (the API runs them), by name.
    pub server: Vec<String>,
    /// The block tools offered.
    pub blocks: Vec<String>,
    /// The program tools, with their descriptions.
    pub programs: Vec<(String, String)>,
    /// Delegation: `call_llm`, the sub-agent.
    pub delegation: Vec<String>,
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    line.split_once(". ").map_or(line, |(first, _)| first)
}

/// The capabilities block, written from what this run really has — by
/// distance from the model's thinking.
pub fn capabilities(have: &Operable) -> Block {
    let mut b = Block::new(
        "capabilities",
        0,
        "What you can operate now, nearest your thinking first.",
    );
    let mut next = 1u8;
    let mut section = |b: &mut Block, title: &str, items: Vec<String>| {
        if items.is_empty() {
            return;
        }
        let _ = b.write(&[next], title);
        for (i, item) in items.iter().take(9).enumerate() {
            let _ = b.write(&[next, i as u8 + 1], item);
        }
        if items.len() > 9 {
            let rest: Vec<&str> = items[8..].iter().map(|s| s.as_str()).collect();
            let _ = b.write(&[next, 9], &rest.join(" | "));
        }
        next += 1;
    };
    let native = have.server.iter().map(|name| match name.as_str() {
        "web_search" => {
            "web_search — search the web; the results come back into your reasoning.".to_owned()
        }
        "web_fetch" => "web_fetch — read a whole page or PDF from a URL.".to_owned(),
        "code_execution" => "code_execution — run code in a sandbox on the API's side.".to_owned(),
        other => format!("{other} — a tool the API runs for you."),
    });
    section(
        &mut b,
        "Native: server tools that run inside your turn.",
        native.collect(),
    );
    section(
        &mut b,
        "Blocks: your structured memory, kept in the substrate.",
        have.blocks.iter().map(|t| block_tool_line(t)).collect(),
    );
    section(
        &mut b,
        "Tools: programs run for you, contained, each call recorded.",
        have.programs
            .iter()
            .map(|(name, text)| format!("{name} — {}", first_line(text)))
            .collect(),
    );
    section(
        &mut b,
        "Delegation: other model instances for a task.",
        have.delegation
            .iter()
            .map(|t| match t.as_str() {
                "call_llm" => "call_llm(prompt, model: default|fast, system?) — one model call without tools; its text.".to_owned(),
                other => format!("{other} — a sub-agent on a task of its own."),
            })
            .collect(),
    );
    b
}

fn block_tool_line(tool: &str) -> String {
    match tool {
        "block_list" => "block_list() — every block: name, decimal, pscale 0.",
        "block_read" => "block_read(name, path?) — a node with its spindle and children (no path: the whole block).",
        "block_write" => "block_write(name, path, content) — text at a node.",
        "block_create" => "block_create(name, pscale0, decimal?) — a new block.",
        "write_entry" => "write_entry(name, path?, content) — an entry at the next free digit; nine full are compressed.",
        "get_datetime" => "get_datetime() — the time now.",
        other => other,
    }
    .to_owned()
}

/// What the system prompt is made from: the constitution and the blocks,
/// as read at one commit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Crab {
    /// The constitution's text.
    pub constitution: String,
    /// The identity's blocks.
    pub blocks: Vec<Block>,
}

/// A text on one line, cut.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.chars().count() > max {
        true => format!("{}…", joined.chars().take(max).collect::<String>()),
        false => joined,
    }
}

impl Crab {
    fn block(&self, name: &str) -> Option<&Block> {
        self.blocks.iter().find(|b| b.name == name)
    }

    /// The hermitcrab's part of the system prompt: the constitution, the
    /// keystone (whole on a `boot`), the aperture, the focus (on a `boot`).
    pub fn render(&self, boot: bool) -> String {
        let mut out = self.constitution.trim_end().to_owned();
        if let Some(keystone) = self.block("keystone") {
            out.push_str("\n\n# Keystone\n\n");
            match boot {
                true => {
                    out.push_str("How to read every block — study it once:\n");
                    out.push_str(
                        &serde_json::to_string_pretty(&keystone.to_body()).unwrap_or_default(),
                    );
                }
                false => out.push_str(keystone.pscale0().trim()),
            }
        }
        out.push_str("\n\n# Aperture\n\nPscale 0 of each block — where you stand:");
        let named = APERTURE.iter().filter_map(|n| self.block(n));
        let others = self
            .blocks
            .iter()
            .filter(|b| b.name != "keystone" && !APERTURE.contains(&b.name.as_str()));
        for block in named.chain(others) {
            out.push_str(&format!(
                "\n[{}] {}",
                block.name,
                one_line(block.pscale0(), 500)
            ));
        }
        if boot {
            out.push_str(&self.focus());
        }
        out
    }

    /// The focus: each growth block's live edge, capabilities' first level.
    fn focus(&self) -> String {
        let mut out = String::from("\n\n# Focus\n");
        let list = |node: Option<&Node>| {
            let mut lines = String::new();
            for (d, child) in node.into_iter().flat_map(|n| n.children()) {
                lines.push_str(&format!("\n  {d}: {}", one_line(child.text(), 200)));
            }
            if lines.is_empty() {
                lines.push_str("\n  (pscale 0 only — nothing below yet)");
            }
            lines
        };
        for name in GROWTH {
            if let Some(block) = self.block(name) {
                let edge = block.tree.at(&block.live_edge());
                out.push_str(&format!("\n[{name} — live edge]{}", list(edge)));
            }
        }
        if let Some(caps) = self.block("capabilities") {
            out.push_str(&format!(
                "\n[capabilities — depth 1]{}",
                list(Some(&caps.tree))
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell() -> Crab {
        let mut blocks = seeds();
        blocks.push(capabilities(&Operable {
            server: vec!["web_search".into()],
            blocks: vec!["block_read".into()],
            programs: vec![("read".into(), "Reads a file. More.".into())],
            delegation: vec!["call_llm".into()],
        }));
        Crab {
            constitution: "Be a crab.".into(),
            blocks,
        }
    }

    #[test]
    fn the_aperture_is_one_line_per_block_and_the_keystone_whole_only_at_boot() {
        let shell = shell();
        let later = shell.render(false);
        let aperture = later.split("# Aperture\n\n").nth(1).unwrap();
        let lines: Vec<&str> = aperture.lines().skip(1).collect();
        assert_eq!(lines.len(), 5, "{aperture}");
        assert!(lines[0].starts_with("[capabilities] What you can operate now"));
        assert!(lines[1].starts_with("[history] What happened"));
        assert!(!later.contains("\"tree\"") && !later.contains("# Focus"));
        let boot = shell.render(true);
        assert!(boot.contains("\"decimal\": 0") && boot.contains("# Focus"));
        assert!(boot.contains("[purpose — live edge]\n  (pscale 0 only"));
        assert!(boot.contains("[capabilities — depth 1]\n  1: Native"));
        assert!(boot.contains("  3: Tools"));
    }

    #[test]
    fn capabilities_list_what_the_run_has_by_distance() {
        let caps = capabilities(&Operable {
            programs: (0..12).map(|i| (format!("p{i}"), "x".to_owned())).collect(),
            ..Operable::default()
        });
        assert_eq!(
            caps.tree.at(&[1]).unwrap().text(),
            "Tools: programs run for you, contained, each call recorded."
        );
        assert_eq!(
            caps.tree.at(&[1, 9]).unwrap().text(),
            "p8 — x | p9 — x | p10 — x | p11 — x"
        );
    }
}
