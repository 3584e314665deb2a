//! Addresses and spindles. A **literal** address is dotted keys from the
//! root (`1.4` is `tree["1"]["4"]`); a **semantic** one is a pscale number
//! (`21.34`: the digits before the point are the levels down to pscale 0,
//! those after it the levels below; on a rendition block a leading `0.` is
//! notation). An address is tried literally first, then semantically. A
//! **spindle** is the chain of texts from the root to the addressed node,
//! each labelled with its pscale — what the model reads.

use super::{Block, Node, Path, dotted};
use std::fmt;

/// Why an address reaches no node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddressError {
    /// A key that is not a digit.
    NotDigit {
        /// The address as given.
        address: String,
        /// The key at fault.
        key: String,
    },
    /// More levels than any block may have ([`MAX_DEPTH`]).
    TooDeep {
        /// The address as given.
        address: String,
    },
    /// More levels before the point than the block has above pscale 0.
    TooHigh {
        /// The address as given.
        address: String,
        /// The block's decimal.
        decimal: u32,
    },
    /// Nothing there: the deepest node that exists on the way.
    Nothing {
        /// The address as given.
        address: String,
        /// The path it was read as.
        path: Path,
        /// The deepest node of it that exists.
        deepest: Path,
        /// That node's text.
        text: String,
    },
}

/// At most the first 40 characters of what was given (an error never
/// echoes a long input whole).
fn shown(given: &str) -> String {
    match given.chars().nth(40) {
        Some(_) => format!("{}…", given.chars().take(40).collect::<String>()),
        None => given.to_owned(),
    }
}

impl fmt::Display for AddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddressError::NotDigit { address, key } => write!(
                f,
                "`{}` has the key `{}`, which is not a digit: an address is digits and \
                 points, literal (`1.4`) or a pscale number (`21.34`)",
                shown(address),
                shown(key)
            ),
            AddressError::TooDeep { address } => write!(
                f,
                "`{}…` is deeper than {MAX_DEPTH} levels, more than any block may have",
                address.chars().take(40).collect::<String>()
            ),
            AddressError::TooHigh { address, decimal } => write!(
                f,
                "`{}` has more digits before its point than the block has levels above \
                 pscale 0 ({decimal})",
                shown(address)
            ),
            AddressError::Nothing {
                address,
                path,
                deepest,
                text,
            } => {
                let at = if deepest.is_empty() {
                    "the root".to_owned()
                } else {
                    format!("`{}`", dotted(deepest))
                };
                write!(
                    f,
                    "nothing at `{}` (read as `{}`): the deepest node there is {at}",
                    shown(address),
                    dotted(path)
                )?;
                if !text.is_empty() {
                    let shown: String = text.chars().take(80).collect();
                    write!(f, " (\"{shown}\")")?;
                }
                Ok(())
            }
        }
    }
}

/// One node of a spindle.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SpindleNode {
    /// Its pscale.
    pub pscale: i64,
    /// Its literal address (the root's is empty).
    pub path: String,
    /// Its text.
    pub text: String,
}

/// An address read: its literal and semantic paths (either may be
/// impossible).
struct Parsed {
    literal: Option<Path>,
    semantic: Option<Path>,
}

fn digits(part: &str) -> Path {
    part.bytes().map(|b| b - b'0').collect()
}

/// Reads `address` for `block`: what it means literally, what it means
/// as a pscale number.
/// The most levels an address may walk: a tree is built (and written, and
/// read back) recursively, so its depth is bounded.
pub const MAX_DEPTH: usize = 32;

fn parse(block: &Block, address: &str) -> Result<Parsed, AddressError> {
    let address = address.trim();
    if address.bytes().filter(u8::is_ascii_digit).count() > MAX_DEPTH {
        return Err(AddressError::TooDeep {
            address: address.to_owned(),
        });
    }
    for key in address.split('.') {
        if !key.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AddressError::NotDigit {
                address: address.to_owned(),
                key: key.to_owned(),
            });
        }
    }
    if address.is_empty() {
        return Ok(Parsed {
            literal: Some(Vec::new()),
            semantic: Some(Vec::new()),
        });
    }
    let keys: Vec<&str> = address.split('.').collect();
    let literal = keys
        .iter()
        .all(|k| k.len() == 1)
        .then(|| keys.iter().map(|k| k.as_bytes()[0] - b'0').collect());
    let semantic = match keys.as_slice() {
        // a bare number: every digit walks
        [whole] => Some(digits(whole)),
        [int, frac] => {
            let frac = digits(frac.trim_end_matches('0'));
            let int = *int;
            if block.is_rendition() {
                let mut path = if int.is_empty() || int == "0" {
                    Vec::new()
                } else {
                    digits(int)
                };
                path.extend(frac);
                Some(path)
            } else {
                let above = block.decimal as usize;
                let int = if int.is_empty() { "0" } else { int };
                if int.len() > above {
                    if literal.is_none() {
                        return Err(AddressError::TooHigh {
                            address: address.to_owned(),
                            decimal: block.decimal,
                        });
                    }
                    None
                } else {
                    let mut path = vec![0; above - int.len()];
                    path.extend(digits(int));
                    path.extend(frac);
                    Some(path)
                }
            }
        }
        _ => None,
    };
    Ok(Parsed { literal, semantic })
}

/// How far `path` reaches in `tree`: the deepest existing prefix.
fn reach(tree: &Node, path: &[u8]) -> Path {
    let mut node = tree;
    let mut deepest = Vec::new();
    for d in path {
        match node.child(*d) {
            Some(child) => {
                deepest.push(*d);
                node = child;
            }
            None => break,
        }
    }
    deepest
}

impl Block {
    /// The path of the node `address` reaches: literally if that node
    /// exists, else as a pscale number; an error names the deepest node
    /// there is.
    pub fn locate(&self, address: &str) -> Result<Path, AddressError> {
        let parsed = parse(self, address)?;
        for path in [&parsed.literal, &parsed.semantic].into_iter().flatten() {
            if self.tree.at(path).is_some() {
                return Ok(path.clone());
            }
        }
        let path = parsed.literal.or(parsed.semantic).unwrap_or_default();
        let deepest = reach(&self.tree, &path);
        Err(AddressError::Nothing {
            address: address.trim().to_owned(),
            text: self.tree.at(&deepest).map_or("", |n| n.text()).to_owned(),
            path,
            deepest,
        })
    }

    /// The path a write to `address` goes to: a node that exists as
    /// [`Block::locate`] finds it, else the literal path (on a rendition
    /// block a leading `0.` is notation), else the semantic one.
    pub fn locate_for_write(&self, address: &str) -> Result<Path, AddressError> {
        let found = self.locate(address);
        if found.is_ok() {
            return found;
        }
        let parsed = parse(self, address)?;
        let notation = self.is_rendition() && address.trim().starts_with("0.");
        let path = match (parsed.literal, parsed.semantic) {
            (Some(_), Some(semantic)) if notation => semantic,
            (Some(literal), _) => literal,
            (None, Some(semantic)) => semantic,
            // read as neither (`12.34.5`): not the root, but refused
            (None, None) => return found,
        };
        Ok(path)
    }

    /// The spindle to `path`: the root (when it has text) and every node
    /// down to the one addressed, each with its pscale.
    pub fn spindle_of(&self, path: &[u8]) -> Vec<SpindleNode> {
        let mut out = Vec::with_capacity(path.len() + 1);
        let mut node = &self.tree;
        if !node.text().is_empty() {
            out.push(SpindleNode {
                pscale: self.pscale(0),
                path: String::new(),
                text: node.text().to_owned(),
            });
        }
        for depth in 1..=path.len() {
            let Some(child) = node.child(path[depth - 1]) else {
                break;
            };
            node = child;
            out.push(SpindleNode {
                pscale: self.pscale(depth),
                path: dotted(&path[..depth]),
                text: node.text().to_owned(),
            });
        }
        out
    }

    /// The spindle `address` reaches.
    pub fn spindle(&self, address: &str) -> Result<Vec<SpindleNode>, AddressError> {
        Ok(self.spindle_of(&self.locate(address)?))
    }
}

/// A spindle as the model reads it: `[name address]`, then a line per
/// node, `  [pscale] text`.
pub fn render_spindle(name: &str, address: &str, nodes: &[SpindleNode]) -> String {
    let mut out = format!("[{name} {address}]");
    for node in nodes {
        out.push_str(&format!("\n  [{}] {}", node.pscale, node.text));
    }
    out
}
