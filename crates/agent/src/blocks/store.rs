//! Blocks in the substrate: one `block` chunk per block, placed instance
//! on its identity's `blocks/IDENTITY` scope; every write a new version of
//! the chunk (the substrate keeps the earlier ones, so `as_of` reads any
//! past state). The hermitcrab's constitution is the `constitution` chunk.

use crate::blocks::{BLOCK, Block, TreeError, chunk_id, scope_of};
use protocol::{ChunkDecl, Client, ClientError, ErrorCode, NewPlacement, PlacementType, ScopeOpts};
use serde_json::json;

/// The chunk holding the hermitcrab's constitution.
pub const CONSTITUTION: &str = "constitution";

/// The archetype of identity scopes (`blocks/hermitcrab`).
pub const BLOCKS: &str = "blocks";

/// A block as stored: readable, or why not.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// Its name.
    pub name: String,
    /// The block, or where its tree is invalid.
    pub block: Result<Block, TreeError>,
}

/// An identity's blocks, read and written through the protocol.
#[derive(Clone)]
pub struct BlockStore {
    client: Client,
    identity: String,
}

impl BlockStore {
    /// The blocks of `identity`.
    pub fn new(client: Client, identity: &str) -> BlockStore {
        BlockStore {
            client,
            identity: identity.to_owned(),
        }
    }

    /// The identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Every block, as of `at` (none: head), with the commit read at.
    pub async fn all(&self, at: Option<u64>) -> Result<(Vec<Stored>, u64), ClientError> {
        let scope = scope_of(&self.identity);
        let opts = ScopeOpts {
            as_of: at,
            ..ScopeOpts::default()
        };
        let read = match self.client.scope(&[scope.as_str()], opts).await {
            Ok(read) => read,
            Err(e) if e.code() == Some(ErrorCode::NotFound) => {
                return Ok((Vec::new(), at.unwrap_or_default()));
            }
            Err(e) => return Err(e),
        };
        let blocks = read
            .chunks
            .iter()
            .filter(|c| c.is_on(BLOCK, PlacementType::Instance))
            .map(|c| Stored {
                name: c.name.clone().unwrap_or_else(|| c.id.clone()),
                block: Block::from_body(&c.body_value()),
            })
            .collect();
        Ok((blocks, read.as_of))
    }

    /// Block `name` as it is now: none when there is no such block.
    pub async fn get(&self, name: &str) -> Result<Option<Result<Block, TreeError>>, ClientError> {
        let id = chunk_id(&self.identity, name);
        match self
            .client
            .scope(&[id.as_str()], ScopeOpts::default())
            .await
        {
            Ok(read) => Ok(read
                .scopes
                .first()
                .filter(|c| c.is_on(BLOCK, PlacementType::Instance))
                .map(|c| Block::from_body(&c.body_value()))),
            Err(e) if e.code() == Some(ErrorCode::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The declaration of `block` as its chunk (a new version of it).
    pub fn chunk(&self, block: &Block) -> ChunkDecl {
        ChunkDecl::with_id(chunk_id(&self.identity, &block.name))
            .name(block.name.clone())
            .body(block.to_body())
            .on(NewPlacement::instance(BLOCK))
            .on(NewPlacement::instance(scope_of(&self.identity)))
    }

    /// Commits `block` as a new one: refused by the store when a block of
    /// its name exists (made meanwhile by another run), never overwriting it.
    pub async fn create(&self, block: &Block) -> Result<substrate::Commit, ClientError> {
        let chunk = self.chunk(block).create_only();
        self.client
            .commit(substrate::Declaration::of(vec![chunk]))
            .await
    }

    /// Commits `blocks` in one commit.
    pub async fn put(&self, blocks: &[&Block]) -> Result<substrate::Commit, ClientError> {
        let chunks: Vec<ChunkDecl> = blocks.iter().map(|b| self.chunk(b)).collect();
        self.client.commit(substrate::Declaration::of(chunks)).await
    }

    /// The constitution's text as of `at` (empty when there is none).
    pub async fn constitution(&self, at: Option<u64>) -> Result<String, ClientError> {
        let opts = ScopeOpts {
            as_of: at,
            limit: Some(1),
            ..ScopeOpts::default()
        };
        match self.client.scope(&[CONSTITUTION], opts).await {
            Ok(read) => Ok(read
                .scopes
                .first()
                .and_then(|c| c.body_value()["text"].as_str().map(str::to_owned))
                .unwrap_or_default()),
            Err(e) if e.code() == Some(ErrorCode::NotFound) => Ok(String::new()),
            Err(e) => Err(e),
        }
    }
}

/// The scope of `identity`'s blocks (a host makes it before a run that
/// keeps blocks: placing it is outside the run's reach).
pub fn scope_chunk(identity: &str) -> ChunkDecl {
    ChunkDecl::with_id(scope_of(identity))
        .name(scope_of(identity))
        .body(json!({"text": format!("The pscale blocks of `{identity}`.")}))
        .on(NewPlacement::instance(BLOCKS))
}

/// Whether `name` may name a block: letters, digits, `-` and `_`.
pub fn valid_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    // a long name is not echoed whole
    let shown = match name.chars().nth(64) {
        Some(_) => format!("{}…", name.chars().take(64).collect::<String>()),
        None => name.to_owned(),
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "`{shown}` is not a block name: use 1–64 letters, digits, `-` or `_`"
        )),
    }
}
