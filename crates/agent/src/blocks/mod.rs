//! pscale blocks (`design/blocks.md`): an agent's structured, growing
//! memory. A block is a tree of text whose nodes are addressed by digits;
//! the depth of a node is its scale (its *pscale*, `decimal − depth`).
//! The format, addresses and spindles ([`address`]), growth and
//! compression ([`grow`]), and what the hermitcrab's system prompt shows
//! of its blocks ([`crab`]) are pure and know nothing of the substrate;
//! [`store`] keeps each block as one `block` chunk through the protocol,
//! every write a new version.

pub mod address;
pub mod crab;
pub mod grow;
pub mod store;

pub use address::{AddressError, SpindleNode};
pub use grow::{Placed, WriteError};

use serde_json::{Map, Value};
use std::fmt;

/// The type every block chunk is an instance of.
pub const BLOCK: &str = "block";

/// The most characters one node's text may have.
pub const MAX_NODE_CHARS: usize = 10_000;

/// The most levels above pscale 0 a block may have (its `decimal`).
pub const MAX_DECIMAL: u32 = 9;

/// The scope an identity's blocks are placed on.
pub fn scope_of(identity: &str) -> String {
    format!("blocks/{identity}")
}

/// The id of `identity`'s block `name`.
pub fn chunk_id(identity: &str, name: &str) -> String {
    format!("block/{identity}/{name}")
}

/// A path into a tree: the digit of each step from the root.
pub type Path = Vec<u8>;

/// A path as written: digits joined by points (`1.4`; the root is ``).
pub fn dotted(path: &[u8]) -> String {
    path.iter()
        .map(|d| char::from(b'0' + d).to_string())
        .collect::<Vec<_>>()
        .join(".")
}

/// A node: a leaf of text, or a branch with text of its own (`_`) and up
/// to ten children, `0`–`9`.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Text with nothing under it.
    Leaf(String),
    /// Text (maybe none) and children.
    Branch(Box<Branch>),
}

/// A node with children.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Branch {
    /// Its own text (`_`).
    pub text: Option<String>,
    /// Its children by digit.
    pub children: [Option<Node>; 10],
}

impl Default for Node {
    fn default() -> Self {
        Node::Branch(Box::default())
    }
}

impl Node {
    /// Its own text: a leaf's, or a branch's `_` (empty when it has none).
    pub fn text(&self) -> &str {
        match self {
            Node::Leaf(text) => text,
            Node::Branch(b) => b.text.as_deref().unwrap_or(""),
        }
    }

    /// Its child `digit`, if any.
    pub fn child(&self, digit: u8) -> Option<&Node> {
        match self {
            Node::Leaf(_) => None,
            Node::Branch(b) => b.children.get(usize::from(digit))?.as_ref(),
        }
    }

    /// Its children, in digit order.
    pub fn children(&self) -> impl Iterator<Item = (u8, &Node)> {
        let all: &[Option<Node>] = match self {
            Node::Leaf(_) => &[],
            Node::Branch(b) => &b.children,
        };
        all.iter()
            .enumerate()
            .filter_map(|(d, c)| c.as_ref().map(|c| (d as u8, c)))
    }

    /// Whether it has children.
    pub fn is_branch(&self) -> bool {
        self.children().next().is_some()
    }

    /// The node at `path` below it.
    pub fn at(&self, path: &[u8]) -> Option<&Node> {
        path.iter().try_fold(self, |node, d| node.child(*d))
    }

    /// Made a branch (a leaf's text becomes its `_`), for a child to be
    /// added.
    pub fn branch_mut(&mut self) -> &mut Branch {
        if let Node::Leaf(text) = self {
            let text = std::mem::take(text);
            *self = Node::Branch(Box::new(Branch {
                text: Some(text),
                ..Branch::default()
            }));
        }
        match self {
            Node::Branch(b) => b,
            Node::Leaf(_) => unreachable!("made a branch above"),
        }
    }

    /// Reads a node, saying where the tree is not one.
    pub fn from_value(value: &Value, at: &mut Path) -> Result<Node, TreeError> {
        match value {
            Value::String(text) => {
                check_len(text, at)?;
                Ok(Node::Leaf(text.clone()))
            }
            Value::Object(fields) => {
                let mut branch = Branch::default();
                for (key, child) in fields {
                    if key == "_" {
                        let Value::String(text) = child else {
                            return Err(TreeError::new(at, "its `_` is not text"));
                        };
                        check_len(text, at)?;
                        branch.text = Some(text.clone());
                        continue;
                    }
                    let digit = match key.as_bytes() {
                        [d @ b'0'..=b'9'] => d - b'0',
                        _ => {
                            return Err(TreeError::new(
                                at,
                                format!("its key `{key}` is not a digit (0–9) or `_`"),
                            ));
                        }
                    };
                    at.push(digit);
                    let node = Node::from_value(child, at)?;
                    at.pop();
                    branch.children[usize::from(digit)] = Some(node);
                }
                Ok(Node::Branch(Box::new(branch)))
            }
            other => Err(TreeError::new(
                at,
                format!(
                    "a node is text or an object of `_` and digits, not {}",
                    kind(other)
                ),
            )),
        }
    }

    /// The node as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Leaf(text) => Value::String(text.clone()),
            Node::Branch(b) => {
                let mut fields = Map::new();
                if let Some(text) = &b.text {
                    fields.insert("_".into(), Value::String(text.clone()));
                }
                for (d, child) in self.children() {
                    fields.insert(char::from(b'0' + d).to_string(), child.to_value());
                }
                Value::Object(fields)
            }
        }
    }

    /// How many nodes it is, itself included.
    pub fn count(&self) -> usize {
        1 + self.children().map(|(_, c)| c.count()).sum::<usize>()
    }
}

fn check_len(text: &str, at: &[u8]) -> Result<(), TreeError> {
    let chars = text.chars().count();
    if chars > MAX_NODE_CHARS {
        return Err(TreeError::new(
            at,
            format!("its text is {chars} characters; a node holds at most {MAX_NODE_CHARS}"),
        ));
    }
    Ok(())
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Where a tree is not a block's tree, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeError {
    /// The node at fault.
    pub at: Path,
    /// What is wrong with it.
    pub why: String,
}

impl TreeError {
    fn new(at: &[u8], why: impl Into<String>) -> TreeError {
        TreeError {
            at: at.to_vec(),
            why: why.into(),
        }
    }
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at.is_empty() {
            true => write!(f, "the tree's root: {}", self.why),
            false => write!(f, "node `{}`: {}", dotted(&self.at), self.why),
        }
    }
}

/// A block: its name, where pscale 0 sits, its tree, and what is only
/// shown (`tuning`, `sign`).
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Its name (`history`).
    pub name: String,
    /// How many levels sit above pscale 0: 0 is a rendition block (its
    /// root is pscale 0), 1 or more a living one.
    pub decimal: u32,
    /// Its tree.
    pub tree: Node,
    /// The tuning fork: free text, only shown.
    pub tuning: Option<String>,
    /// 1 real, −1 fictional; only shown.
    pub sign: Option<i64>,
    /// Nodes left full whose compression failed, to be tried again at the
    /// next entry.
    pub pending: Vec<String>,
}

impl Block {
    /// A new block: living (`decimal ≥ 1`, `pscale0` its pscale-0 node's
    /// text along the `0` path) or a rendition (`decimal` 0, `pscale0` its
    /// root's text).
    pub fn new(name: &str, decimal: u32, pscale0: &str) -> Block {
        let mut tree = Node::Leaf(pscale0.to_owned());
        for _ in 0..decimal {
            let mut above = Branch::default();
            above.children[0] = Some(tree);
            tree = Node::Branch(Box::new(above));
        }
        if decimal == 0 {
            tree = Node::Branch(Box::new(Branch {
                text: Some(pscale0.to_owned()),
                ..Branch::default()
            }));
        }
        Block {
            name: name.to_owned(),
            decimal,
            tree,
            tuning: None,
            sign: None,
            pending: Vec::new(),
        }
    }

    /// Reads a block chunk's body, saying where it is not a block.
    pub fn from_body(body: &Value) -> Result<Block, TreeError> {
        let root: &[u8] = &[];
        let name = body["name"].as_str().unwrap_or_default().to_owned();
        let decimal = match &body["decimal"] {
            Value::Null => 0,
            Value::Number(n) => n
                .as_u64()
                .filter(|d| *d <= u64::from(MAX_DECIMAL))
                .ok_or_else(|| TreeError::new(root, "`decimal` must be a whole number 0–9"))?
                as u32,
            _ => return Err(TreeError::new(root, "`decimal` must be a whole number 0–9")),
        };
        let tree = match body.get("tree") {
            None | Some(Value::Null) => {
                return Err(TreeError::new(root, "the block has no `tree`"));
            }
            Some(tree) => Node::from_value(tree, &mut Vec::new())?,
        };
        Ok(Block {
            name,
            decimal,
            tree,
            tuning: body["tuning"].as_str().map(str::to_owned),
            sign: body["sign"].as_i64(),
            pending: body["pending"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// The chunk body.
    pub fn to_body(&self) -> Value {
        let mut body = Map::new();
        body.insert("name".into(), Value::String(self.name.clone()));
        body.insert("decimal".into(), Value::from(self.decimal));
        body.insert("tree".into(), self.tree.to_value());
        if let Some(tuning) = &self.tuning {
            body.insert("tuning".into(), Value::String(tuning.clone()));
        }
        if let Some(sign) = self.sign {
            body.insert("sign".into(), Value::from(sign));
        }
        if !self.pending.is_empty() {
            body.insert("pending".into(), Value::from(self.pending.clone()));
        }
        Value::Object(body)
    }

    /// Whether it is a rendition block (its root is pscale 0).
    pub fn is_rendition(&self) -> bool {
        self.decimal == 0
    }

    /// The pscale of a node `depth` steps below the root.
    pub fn pscale(&self, depth: usize) -> i64 {
        i64::from(self.decimal) - depth as i64
    }

    /// The path of its pscale-0 node: `decimal` steps along `0`.
    pub fn pscale0_path(&self) -> Path {
        vec![0; self.decimal as usize]
    }

    /// Its pscale-0 text: the aperture's line.
    pub fn pscale0(&self) -> &str {
        self.tree.at(&self.pscale0_path()).map_or("", |n| n.text())
    }

    /// The live edge: from the root, the newest (highest) child at each
    /// level down to pscale 0 — where entries go now.
    pub fn live_edge(&self) -> Path {
        let mut path = Vec::new();
        let mut node = &self.tree;
        while path.len() < self.decimal as usize {
            match node.children().last() {
                Some((d, child)) => {
                    path.push(d);
                    node = child;
                }
                None => path.push(0),
            }
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tree_reads_and_writes_back_the_same() {
        let body = json!({"name": "place", "decimal": 1, "tree": {"_": "all",
            "0": {"_": "here", "1": "a cup", "2": {"_": "a table", "3": "a leg"}}}, "sign": -1});
        let block = Block::from_body(&body).unwrap();
        assert_eq!(block.to_body(), body);
        assert_eq!(block.pscale0(), "here");
        assert_eq!(block.tree.count(), 5);
    }

    #[test]
    fn an_invalid_tree_says_where() {
        let bad = |tree: Value| {
            Block::from_body(&json!({"name": "x", "decimal": 0, "tree": tree}))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            bad(json!({"_": "r", "1": {"_": "a", "x": "b"}})),
            "node `1`: its key `x` is not a digit (0–9) or `_`"
        );
        assert_eq!(
            bad(json!({"2": {"3": 7}})),
            "node `2.3`: a node is text or an object of `_` and digits, not a number"
        );
        assert_eq!(
            bad(json!({"_": ["no"]})),
            "the tree's root: its `_` is not text"
        );
        let long = "x".repeat(MAX_NODE_CHARS + 1);
        assert!(bad(json!({"4": long})).starts_with("node `4`: its text is 10001 characters"));
    }

    #[test]
    fn new_blocks_put_pscale_0_where_decimal_says() {
        let living = Block::new("history", 2, "what happened");
        assert_eq!(living.pscale0_path(), vec![0, 0]);
        assert_eq!(living.pscale0(), "what happened");
        let rendition = Block::new("keystone", 0, "the format");
        assert_eq!(rendition.pscale0(), "the format");
        assert!(rendition.is_rendition());
    }

    #[test]
    fn the_live_edge_follows_the_newest_child() {
        let block = Block::from_body(&json!({"name": "h", "decimal": 2, "tree": {
            "0": {"0": "old", "1": "older edge"}, "1": {"0": {"_": "new", "1": "e"}}}}))
        .unwrap();
        assert_eq!(block.live_edge(), vec![1, 0]);
        assert_eq!(Block::new("h", 1, "x").live_edge(), vec![0]);
    }
}
