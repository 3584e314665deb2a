//! The substrate's data types: what a declaration says, what a commit
//! records, what a scope read returns. They serialize to exactly the JSON of
//! `docs/substrate.md` and `docs/protocol.md`.

use crate::json::Json;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A commit id: integers increasing by one from 1.
pub type CommitId = u64;

/// How a chunk sits on a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlacementType {
    /// A member of the scope: structural content, or "is a" when the scope is a type.
    Instance,
    /// Associated with the scope but not a member of it.
    Relates,
}

impl PlacementType {
    /// `"instance"` or `"relates"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlacementType::Instance => "instance",
            PlacementType::Relates => "relates",
        }
    }
}

/// One of a chunk's own placements, as a read reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The scope the chunk sits on.
    pub scope: String,
    /// Instance or relates.
    #[serde(rename = "type")]
    pub kind: PlacementType,
    /// Position, present exactly when the scope is ordered.
    pub seq: Option<i64>,
}

/// A chunk as a read returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkItem {
    /// The chunk's id.
    pub id: String,
    /// Its human label.
    pub name: Option<String>,
    /// Its rules as a scope.
    pub spec: Json,
    /// Its content; absent when the read asked for `include.body: false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Json>,
    /// Every placement of the chunk, ordered by scope then type.
    pub placements: Vec<Placement>,
}

impl ChunkItem {
    /// The parsed body (`{}` when the read left bodies out).
    pub fn body_value(&self) -> Value {
        self.body
            .as_ref()
            .map(Json::to_value)
            .unwrap_or_else(|| Value::Object(Default::default()))
    }

    /// Whether the chunk is placed on `scope` with `kind`.
    pub fn is_on(&self, scope: &str, kind: PlacementType) -> bool {
        self.placements
            .iter()
            .any(|p| p.scope == scope && p.kind == kind)
    }
}

/// A placement a declaration adds for the chunk it declares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewPlacement {
    /// The scope to place on.
    pub scope: String,
    /// Instance or relates.
    #[serde(rename = "type")]
    pub kind: PlacementType,
    /// An explicit position on an ordered scope; omitted means "append".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
}

impl NewPlacement {
    /// An instance placement, appended when the scope is ordered.
    pub fn instance(scope: impl Into<String>) -> NewPlacement {
        NewPlacement {
            scope: scope.into(),
            kind: PlacementType::Instance,
            seq: None,
        }
    }

    /// A relates placement, appended when the scope is ordered.
    pub fn relates(scope: impl Into<String>) -> NewPlacement {
        NewPlacement {
            scope: scope.into(),
            kind: PlacementType::Relates,
            seq: None,
        }
    }

    /// The same placement at an explicit position.
    pub fn at(mut self, seq: i64) -> NewPlacement {
        self.seq = Some(seq);
        self
    }
}

/// A chunk created or updated by a declaration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkDecl {
    /// The chunk's id; omitted means "generate one" (returned in the commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A new name: `Some(None)` clears it, `None` keeps the stored one.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<Option<String>>,
    /// A new spec (a JSON object), replacing the stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Value>,
    /// A new body (a JSON object): replaces the stored one, or with `merge`
    /// is applied to it as an RFC 7396 merge patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Apply `body` as a merge patch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merge: bool,
    /// Fail with `VALIDATION_ERROR` when the id already exists.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub create: bool,
    /// Placements of this chunk to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<NewPlacement>,
}

/// Deserializes a field that is present (possibly as `null`) into `Some`.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

impl ChunkDecl {
    /// A declaration of the chunk `id` (created, or updated when it exists).
    pub fn with_id(id: impl Into<String>) -> ChunkDecl {
        ChunkDecl {
            id: Some(id.into()),
            ..ChunkDecl::default()
        }
    }

    /// A new chunk whose id the substrate generates.
    pub fn generated() -> ChunkDecl {
        ChunkDecl::default()
    }

    /// Sets the name.
    pub fn name(mut self, name: impl Into<String>) -> ChunkDecl {
        self.name = Some(Some(name.into()));
        self
    }

    /// Sets the spec.
    pub fn spec(mut self, spec: Value) -> ChunkDecl {
        self.spec = Some(spec);
        self
    }

    /// Sets the body (replacing).
    pub fn body(mut self, body: Value) -> ChunkDecl {
        self.body = Some(body);
        self
    }

    /// Sets a merge patch for the body.
    pub fn merge_body(mut self, patch: Value) -> ChunkDecl {
        self.body = Some(patch);
        self.merge = true;
        self
    }

    /// Requires that the chunk does not exist yet.
    pub fn create_only(mut self) -> ChunkDecl {
        self.create = true;
        self
    }

    /// Adds a placement.
    pub fn on(mut self, placement: NewPlacement) -> ChunkDecl {
        self.placements.push(placement);
        self
    }
}

/// A placement of an existing (or co-declared) chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementDecl {
    /// The chunk placed.
    pub chunk: String,
    /// The scope it is placed on.
    pub scope: String,
    /// Instance or relates.
    #[serde(rename = "type")]
    pub kind: PlacementType,
    /// An explicit position on an ordered scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
}

/// Identifies one placement to remove.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementKey {
    /// The chunk placed.
    pub chunk: String,
    /// The scope it is placed on.
    pub scope: String,
    /// Instance or relates.
    #[serde(rename = "type")]
    pub kind: PlacementType,
}

/// What a declaration removes. Removals apply first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Removals {
    /// Placements to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<PlacementKey>,
    /// Chunks to remove, with every placement on them and of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<String>,
}

/// One atomic change: removals, then chunks, then bare placements.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    /// Chunks to create or update, each with placements to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<ChunkDecl>,
    /// Placements of chunks that exist or are declared above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<PlacementDecl>,
    /// What to remove.
    #[serde(default)]
    pub remove: Removals,
}

impl Declaration {
    /// A declaration of these chunks.
    pub fn of(chunks: Vec<ChunkDecl>) -> Declaration {
        Declaration {
            chunks,
            ..Declaration::default()
        }
    }

    /// Parses a declaration from JSON; a malformed one is `INVALID_REQUEST`
    /// with serde's account of where and why.
    pub fn from_json(text: &str) -> Result<Declaration, crate::Error> {
        serde_json::from_str(text)
            .map_err(|e| crate::Error::InvalidRequest(format!("malformed declaration: {e}")))
    }

    /// True when it declares nothing at all.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
            && self.placements.is_empty()
            && self.remove.placements.is_empty()
            && self.remove.chunks.is_empty()
    }
}

/// Whether a placement was added or removed by a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlacementOp {
    /// The placement began with this commit.
    Added,
    /// The placement ended with this commit.
    Removed,
}

/// A placement a commit added or removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementChange {
    /// The chunk placed.
    pub chunk: String,
    /// The scope.
    pub scope: String,
    /// Instance or relates.
    #[serde(rename = "type")]
    pub kind: PlacementType,
    /// Its position (for a removal, the one it had).
    pub seq: Option<i64>,
    /// Added or removed.
    pub op: PlacementOp,
}

/// Who made a commit (decision 19): the person it acts for, the host its
/// engine ran on, and the front end or process it came through. On a
/// shared store the person is the database's own stamp — the role that
/// wrote the row — whatever a client's record says; on a file, the
/// file's person.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    /// The person.
    #[serde(default)]
    pub person: String,
    /// The host (`HC_HOST`, else the machine's name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The front end or process: `terminal`, `page`, `sdk`, `acp`,
    /// `worker`, `serve`, or `program:p_…` for a process's own commit.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub via: String,
    /// The person a front end committed for when it is not its own (a
    /// page user, by their token): vouched for by the host, never taken
    /// from what a client sent.
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub on_behalf: Option<String>,
}

impl Author {
    /// Who it shows: `alice`, `bob (through alice's page)`.
    pub fn shown(&self) -> String {
        match &self.on_behalf {
            Some(user) if *user != self.person => {
                format!("{user} (through {}'s {})", self.person, self.via)
            }
            _ => self.person.clone(),
        }
    }
}

/// The record of one commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// This commit's id.
    pub id: CommitId,
    /// The previous commit (`None` for the first).
    pub parent_id: Option<CommitId>,
    /// RFC 3339 UTC with milliseconds.
    pub timestamp: String,
    /// The process whose run caused the commit; `None` for the host.
    pub dispatch_id: Option<String>,
    /// Chunks created, updated or removed.
    pub chunks_modified: Vec<String>,
    /// Chunks created (a subset of `chunks_modified`), generated ids included.
    pub created: Vec<String>,
    /// Chunks removed (a subset of `chunks_modified`).
    pub removed: Vec<String>,
    /// Placements added or removed.
    pub placements_modified: Vec<PlacementChange>,
    /// Every scope the commit touched; subscriptions match against it.
    pub touched_scopes: Vec<String>,
    /// Who made it (`None`: a commit from before authors were recorded,
    /// or one made with no author given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
}

/// Which placements count as membership in a read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypeFilter {
    /// Instance placements only.
    Instance,
    /// Relates placements only.
    Relates,
    /// Both (the default).
    #[default]
    Both,
}

impl TypeFilter {
    /// The default: both types count.
    pub fn is_both(&self) -> bool {
        *self == TypeFilter::Both
    }

    /// Whether a placement of `kind` counts.
    pub fn admits(self, kind: PlacementType) -> bool {
        match self {
            TypeFilter::Both => true,
            TypeFilter::Instance => kind == PlacementType::Instance,
            TypeFilter::Relates => kind == PlacementType::Relates,
        }
    }
}

/// What a read returns besides ids and placements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Include {
    /// Return bodies (default true).
    pub body: bool,
    /// Return the `dimensions` facets (default false).
    pub dimensions: bool,
}

impl Include {
    /// Bodies on, dimensions off.
    pub fn is_default(&self) -> bool {
        *self == Include::default()
    }
}

impl Default for Include {
    fn default() -> Self {
        Include {
            body: true,
            dimensions: false,
        }
    }
}

/// Options of a scope read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScopeOpts {
    /// A full-text query over names and every string in bodies.
    #[serde(rename = "match_", skip_serializing_if = "Option::is_none")]
    pub match_: Option<String>,
    /// At most this many members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The `next_after` cursor of a previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Which placements count as membership.
    #[serde(rename = "type", skip_serializing_if = "TypeFilter::is_both")]
    pub kind: TypeFilter,
    /// Drop members also placed on any of these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Bodies off, dimensions on.
    #[serde(skip_serializing_if = "Include::is_default")]
    pub include: Include,
    /// Read the substrate as it stood right after this commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<CommitId>,
}

/// A scope named with how many chunks it holds (dimensions, topology).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeCount {
    /// The scope's id.
    pub id: String,
    /// Its name.
    pub name: Option<String>,
    /// Members counted.
    pub count: u64,
}

/// The result of a scope read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScopeResult {
    /// The requested chunks, in request order.
    pub scopes: Vec<Arc<ChunkItem>>,
    /// The members, in order, after `after` and up to `limit`. Items are
    /// shared (`Arc`): a read copies no chunk.
    pub chunks: Vec<Arc<ChunkItem>>,
    /// How many members match before `limit`.
    pub total: u64,
    /// A cursor for the next page when `limit` cut the list.
    pub next_after: Option<String>,
    /// Scopes outside the reader's boundary that members sit on (filled by
    /// the engine; a direct substrate read leaves it empty).
    #[serde(default)]
    pub topology: Vec<ScopeCount>,
    /// The other scopes matching members sit on, most populated first
    /// (only with `include.dimensions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<Vec<ScopeCount>>,
    /// The commit the read reflects (0 on an empty substrate).
    pub as_of: CommitId,
    /// Members whose version another person wrote whom the reader does not
    /// take as their own (filled by the engine, on a shared store, for a
    /// read of its programs; a direct substrate read leaves it empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign: Vec<Foreign>,
}

/// A chunk another person wrote ([`ScopeResult::foreign`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Foreign {
    /// The chunk.
    pub id: String,
    /// Who wrote its version (`None`: before authors were recorded).
    #[serde(default)]
    pub by: Option<String>,
}
