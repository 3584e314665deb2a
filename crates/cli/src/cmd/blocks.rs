//! `hc blocks [list | show NAME [PATH] | spindle NAME ADDRESS]`: an
//! identity's pscale blocks (`design/blocks.md`), read straight from the
//! substrate — as of now, or `--as-of` a past commit (every write is a new
//! version). A block edited by hand into an invalid tree is shown with
//! where it is invalid.

use crate::exit::exit;
use crate::project::Project;
use crate::style::{bold, cut, dim, shown};
use agent::blocks::address::render_spindle;
use agent::blocks::crab::IDENTITY;
use agent::blocks::{BLOCK, Block, Node, chunk_id, dotted, scope_of};
use anyhow::{Context as _, Result};
use clap::Subcommand;
use serde_json::{Value, json};
use substrate::{PlacementType, ScopeOpts, Substrate};

/// `hc blocks`' commands.
#[derive(Debug, Subcommand)]
pub enum BlocksCommand {
    /// Every block: name, decimal, pscale-0 text.
    List,
    /// A block as a tree (or one node of it: its spindle and children).
    Show {
        /// The block's name.
        name: String,
        /// An address: literal (`1.4`) or a pscale number (`21.34`).
        path: Option<String>,
    },
    /// The spindle to ADDRESS: each text from the root down, with its pscale.
    Spindle {
        /// The block's name.
        name: String,
        /// An address: literal (`1.4`) or a pscale number (`21.34`).
        address: String,
    },
}

/// Where the blocks are read from, and how they are printed.
#[derive(Debug, clap::Args)]
pub struct BlocksFlags {
    /// Whose blocks (default: hermitcrab).
    #[arg(long, global = true)]
    identity: Option<String>,
    /// As they were at commit N.
    #[arg(long, global = true, value_name = "N")]
    as_of: Option<u64>,
    /// As JSON.
    #[arg(long, global = true)]
    json: bool,
}

/// `hc blocks …`.
pub fn blocks(command: Option<BlocksCommand>, flags: BlocksFlags) -> Result<()> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = Project::find(&here)?;
    let (db, _) = project.open()?;
    let identity = flags.identity.as_deref().unwrap_or(IDENTITY);
    let read = Read {
        db: &db,
        identity,
        as_of: flags.as_of,
    };
    match command.unwrap_or(BlocksCommand::List) {
        BlocksCommand::List => list(&read, flags.json),
        BlocksCommand::Show { name, path } => {
            let block = read.block(&name)?;
            match path {
                None if flags.json => print(&block.to_body()),
                None => {
                    print_tree(&block);
                    Ok(())
                }
                Some(address) => show_node(&block, &address, flags.json),
            }
        }
        BlocksCommand::Spindle { name, address } => {
            let block = read.block(&name)?;
            let nodes = block
                .spindle(&address)
                .map_err(|e| exit(1, format!("block `{name}`: {e}")))?;
            match flags.json {
                true => print(&json!(nodes)),
                false => {
                    println!("{}", shown(&render_spindle(&name, &address, &nodes)));
                    Ok(())
                }
            }
        }
    }
}

struct Read<'a> {
    db: &'a Substrate,
    identity: &'a str,
    as_of: Option<u64>,
}

impl Read<'_> {
    fn opts(&self) -> ScopeOpts {
        ScopeOpts {
            as_of: self.as_of,
            ..ScopeOpts::default()
        }
    }

    /// Block `name`; an invalid one is an error saying where.
    fn block(&self, name: &str) -> Result<Block> {
        let id = chunk_id(self.identity, name);
        let read = self.db.scope(&[id.as_str()], &self.opts()).map_err(|_| {
            exit(
                1,
                format!(
                    "there is no block `{name}` of `{}` (`hc blocks` lists them)",
                    self.identity
                ),
            )
        })?;
        let body = read
            .scopes
            .first()
            .map(|c| c.body_value())
            .unwrap_or_default();
        Block::from_body(&body).map_err(|invalid| {
            exit(
                1,
                format!(
                    "block `{name}` is not a valid block — {invalid}. Its body is:\n{}\nFix it \
                     with `hc commit` (a node is text or an object of `_` and digit keys).",
                    serde_json::to_string_pretty(&body).unwrap_or_default()
                ),
            )
        })
    }
}

fn print(value: &Value) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// One block as `hc blocks list` shows it (`--json`: these fields).
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Row {
    /// A block that reads as one.
    Valid {
        name: String,
        decimal: u32,
        pscale0: String,
        nodes: usize,
    },
    /// One that does not, and why.
    Invalid { name: String, invalid: String },
}

fn list(read: &Read<'_>, as_json: bool) -> Result<()> {
    let scope = scope_of(read.identity);
    let chunks = match read.db.scope(&[scope.as_str()], &read.opts()) {
        Ok(r) => r.chunks,
        Err(_) => Vec::new(),
    };
    let mut rows = Vec::new();
    for chunk in chunks
        .iter()
        .filter(|c| c.is_on(BLOCK, PlacementType::Instance))
    {
        let name = chunk.name.clone().unwrap_or_else(|| chunk.id.clone());
        rows.push(match Block::from_body(&chunk.body_value()) {
            Ok(b) => Row::Valid {
                pscale0: b.pscale0().to_owned(),
                name,
                decimal: b.decimal,
                nodes: b.tree.count(),
            },
            Err(e) => Row::Invalid {
                name,
                invalid: e.to_string(),
            },
        });
    }
    if as_json {
        return print(&serde_json::to_value(&rows)?);
    }
    if rows.is_empty() {
        println!(
            "no blocks of `{}` yet: `hc run --agent hermitcrab` seeds them",
            read.identity
        );
        return Ok(());
    }
    for row in rows {
        match row {
            Row::Invalid { name, invalid } => println!(
                "{}  {}",
                bold(&shown(&name)),
                crate::style::bad(&shown(&format!("invalid: {invalid}")))
            ),
            Row::Valid {
                name,
                decimal,
                pscale0,
                nodes,
            } => println!(
                "{}  {}  {}",
                bold(&shown(&name)),
                dim(&format!("decimal {decimal} · {nodes} nodes")),
                cut(&shown(&pscale0), 80)
            ),
        }
    }
    Ok(())
}

/// The whole tree: a line per node, `path [pscale] text`.
fn print_tree(block: &Block) {
    let kind = match block.is_rendition() {
        true => "rendition".to_owned(),
        false => format!("living, pscale 0 at `{}`", dotted(&block.pscale0_path())),
    };
    println!(
        "{}  {}",
        bold(&shown(&block.name)),
        dim(&format!("decimal {} · {kind}", block.decimal))
    );
    fn walk(block: &Block, node: &Node, path: &mut Vec<u8>) {
        let label = if path.is_empty() {
            "·".to_owned()
        } else {
            dotted(path)
        };
        let indent = "  ".repeat(path.len());
        println!(
            "{indent}{} {} {}",
            bold(&label),
            dim(&format!("[{}]", block.pscale(path.len()))),
            cut(&shown(node.text()), 100)
        );
        for (d, child) in node.children() {
            path.push(d);
            walk(block, child, path);
            path.pop();
        }
    }
    walk(block, &block.tree, &mut Vec::new());
}

/// One node: its spindle, then its children.
fn show_node(block: &Block, address: &str, as_json: bool) -> Result<()> {
    let path = block
        .locate(address)
        .map_err(|e| exit(1, format!("block `{}`: {e}", block.name)))?;
    let Some(node) = block.tree.at(&path) else {
        return Err(exit(
            1,
            format!("block `{}`: nothing at `{address}`", block.name),
        ));
    };
    let spindle = block.spindle_of(&path);
    if as_json {
        let children: serde_json::Map<String, Value> = node
            .children()
            .map(|(d, c)| (d.to_string(), c.to_value()))
            .collect();
        return print(&json!({"path": dotted(&path), "content": node.text(),
                             "spindle": spindle, "children": children}));
    }
    println!("{}", shown(&render_spindle(&block.name, address, &spindle)));
    for (d, child) in node.children() {
        let more = if child.is_branch() { " …" } else { "" };
        let mut at = path.clone();
        at.push(d);
        println!(
            "    {} {}{more}",
            bold(&dotted(&at)),
            cut(&shown(child.text()), 100)
        );
    }
    Ok(())
}
