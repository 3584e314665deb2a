//! Property test: random sequences of declarations against a plain
//! in-memory model of `docs/substrate.md`. Same validation outcomes, same
//! reads after every step, and `as_of` reads of every past commit equal to
//! the model's state at that commit.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use substrate::{
    ChunkDecl, Declaration, NewPlacement, PlacementDecl, PlacementKey, PlacementType, Removals,
    ScopeOpts, Substrate, TypeFilter,
};

const IDS: &[&str] = &["T", "U", "A", "B", "x", "y", "z"];

// ---------------------------------------------------------------- the model

#[derive(Clone, Debug)]
struct MChunk {
    name: Option<String>,
    spec: Value,
    body: Value,
    created: u64,
}

#[derive(Clone, Debug)]
struct MPlacement {
    chunk: String,
    scope: String,
    kind: PlacementType,
    seq: Option<i64>,
    began: u64,
    pos: i64,
}

#[derive(Clone, Debug, Default)]
struct Model {
    chunks: BTreeMap<String, MChunk>,
    placements: Vec<MPlacement>,
    /// Chunks created so far: the whole-store order is creation order.
    creations: u64,
}

fn merge(doc: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !doc.is_object() {
                *doc = Value::Object(Map::new());
            }
            let d = doc.as_object_mut().unwrap();
            for (k, v) in p {
                if v.is_null() {
                    d.remove(k);
                } else {
                    merge(d.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *doc = other.clone(),
    }
}

fn strs(v: &Value, key: &str) -> Option<Vec<String>> {
    v.get(key).and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    })
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

#[derive(Default)]
struct Composed {
    required: Vec<String>,
    unique: Vec<String>,
    accepts: Option<Vec<String>>,
    ordered: bool,
}

impl Model {
    fn find(&self, chunk: &str, scope: &str, kind: PlacementType) -> Option<usize> {
        self.placements
            .iter()
            .position(|p| p.chunk == chunk && p.scope == scope && p.kind == kind)
    }

    fn is_instance_of(&self, chunk: &str, ty: &str) -> bool {
        self.find(chunk, ty, PlacementType::Instance).is_some()
    }

    fn ancestors(&self, id: &str) -> Vec<String> {
        let mut seen: Vec<String> = vec![id.to_owned()];
        let mut i = 0;
        while i < seen.len() {
            let cur = seen[i].clone();
            for p in &self.placements {
                if p.chunk == cur && p.kind == PlacementType::Instance && !seen.contains(&p.scope) {
                    seen.push(p.scope.clone());
                }
            }
            i += 1;
        }
        seen.remove(0);
        seen
    }

    fn composed(&self, id: &str) -> Composed {
        let mut out = Composed::default();
        let mut absorb = |spec: &Value| {
            for r in strs(spec, "required").unwrap_or_default() {
                if !out.required.contains(&r) {
                    out.required.push(r);
                }
            }
            for r in strs(spec, "unique").unwrap_or_default() {
                if !out.unique.contains(&r) {
                    out.unique.push(r);
                }
            }
            if let Some(a) = strs(spec, "accepts") {
                let list = out.accepts.get_or_insert_with(Vec::new);
                for t in a {
                    if !list.contains(&t) {
                        list.push(t);
                    }
                }
            }
            out.ordered |= flag(spec, "ordered");
        };
        if let Some(own) = self.chunks.get(id)
            && !flag(&own.spec, "propagate")
        {
            absorb(&own.spec);
        }
        for a in self.ancestors(id) {
            if let Some(c) = self.chunks.get(&a)
                && flag(&c.spec, "propagate")
            {
                absorb(&c.spec);
            }
        }
        out
    }

    /// Applies a declaration as commit `n`: the new state, or the error code.
    fn apply(&self, decl: &Declaration, n: u64) -> Result<Model, &'static str> {
        if decl.is_empty() {
            return Err("INVALID_REQUEST");
        }
        let mut m = self.clone();
        for k in &decl.remove.placements {
            let i = m.find(&k.chunk, &k.scope, k.kind).ok_or("NOT_FOUND")?;
            m.placements.remove(i);
        }
        for id in &decl.remove.chunks {
            m.chunks.remove(id).ok_or("NOT_FOUND")?;
            m.placements.retain(|p| p.chunk != *id && p.scope != *id);
        }
        let mut queue = Vec::new();
        let mut body_changed = Vec::new();
        for c in &decl.chunks {
            let id = c.id.clone().unwrap();
            let cur = m.chunks.get(&id).cloned();
            if c.create && cur.is_some() {
                return Err("VALIDATION_ERROR");
            }
            let mut next = match cur.clone() {
                Some(existing) => existing,
                None => {
                    m.creations += 1;
                    MChunk {
                        name: None,
                        spec: json!({}),
                        body: json!({}),
                        created: m.creations,
                    }
                }
            };
            if let Some(name) = &c.name {
                next.name = name.clone();
            }
            if let Some(spec) = &c.spec {
                next.spec = spec.clone();
            }
            if let Some(body) = &c.body {
                if c.merge {
                    merge(&mut next.body, body);
                } else {
                    next.body = body.clone();
                }
            }
            if cur.as_ref().is_none_or(|old| old.body != next.body) {
                body_changed.push(id.clone());
            }
            m.chunks.insert(id.clone(), next);
            for p in &c.placements {
                queue.push((id.clone(), p.scope.clone(), p.kind, p.seq));
            }
        }
        for p in &decl.placements {
            queue.push((p.chunk.clone(), p.scope.clone(), p.kind, p.seq));
        }
        let mut pos = 0;
        let mut new_rows = Vec::new();
        for (chunk, scope, kind, seq) in queue {
            if chunk == scope {
                return Err("VALIDATION_ERROR");
            }
            if !m.chunks.contains_key(&chunk) || !m.chunks.contains_key(&scope) {
                return Err("NOT_FOUND");
            }
            if let Some(i) = m.find(&chunk, &scope, kind) {
                if seq.is_some() && seq != m.placements[i].seq {
                    return Err("VALIDATION_ERROR");
                }
                continue;
            }
            pos += 1;
            m.placements.push(MPlacement {
                chunk,
                scope,
                kind,
                seq,
                began: n,
                pos,
            });
            new_rows.push(m.placements.len() - 1);
        }
        for &i in &new_rows {
            let scope = m.placements[i].scope.clone();
            let ordered = m.composed(&scope).ordered;
            match (ordered, m.placements[i].seq) {
                (false, Some(_)) => return Err("VALIDATION_ERROR"),
                (true, Some(s)) => {
                    let taken = m
                        .placements
                        .iter()
                        .enumerate()
                        .any(|(j, p)| j != i && p.scope == scope && p.seq == Some(s));
                    if taken {
                        return Err("VALIDATION_ERROR");
                    }
                }
                (true, None) => {
                    let max = m
                        .placements
                        .iter()
                        .filter(|p| p.scope == scope)
                        .filter_map(|p| p.seq)
                        .max();
                    m.placements[i].seq = Some(max.map_or(0, |x| x + 1));
                }
                (false, None) => {}
            }
        }
        let mut checked = HashSet::new();
        for &i in &new_rows {
            let p = m.placements[i].clone();
            if p.kind != PlacementType::Instance {
                continue;
            }
            let spec = m.composed(&p.scope);
            if let Some(types) = &spec.accepts
                && !types.iter().any(|t| m.is_instance_of(&p.chunk, t))
            {
                return Err("VALIDATION_ERROR");
            }
            m.check_fields(&p.chunk, &p.scope, &spec)?;
            checked.insert((p.chunk, p.scope));
        }
        for chunk in body_changed {
            let scopes: Vec<String> = m
                .placements
                .iter()
                .filter(|p| p.chunk == chunk && p.kind == PlacementType::Instance)
                .map(|p| p.scope.clone())
                .collect();
            for scope in scopes {
                if !checked.contains(&(chunk.clone(), scope.clone())) {
                    let spec = m.composed(&scope);
                    m.check_fields(&chunk, &scope, &spec)?;
                }
            }
        }
        Ok(m)
    }

    fn check_fields(&self, chunk: &str, scope: &str, spec: &Composed) -> Result<(), &'static str> {
        let body = &self.chunks[chunk].body;
        for f in &spec.required {
            if body.get(f).is_none_or(Value::is_null) {
                return Err("VALIDATION_ERROR");
            }
        }
        for f in &spec.unique {
            let Some(v) = body.get(f).filter(|v| !v.is_null()) else {
                continue;
            };
            let clash = self.placements.iter().any(|p| {
                p.scope == scope
                    && p.kind == PlacementType::Instance
                    && p.chunk != chunk
                    && self.chunks[&p.chunk].body.get(f) == Some(v)
            });
            if clash {
                return Err("VALIDATION_ERROR");
            }
        }
        Ok(())
    }

    /// What `scope(ids)` should return: each member's id, name, spec, body and
    /// placements, in order.
    fn read(&self, ids: &[&str], filter: TypeFilter) -> Result<Vec<Item>, &'static str> {
        if ids.is_empty() {
            let mut all: Vec<(u64, &String)> =
                self.chunks.iter().map(|(id, c)| (c.created, id)).collect();
            all.sort();
            return Ok(all.into_iter().map(|(_, id)| self.item(id)).collect());
        }
        if ids.iter().any(|id| !self.chunks.contains_key(*id)) {
            return Err("NOT_FOUND");
        }
        // The first ordered scope orders the read (by `seq`); with none, the
        // first id does, by the commit that placed each member — a `seq`
        // left from when a scope was ordered does not count.
        let ordered_at = ids.iter().position(|id| self.composed(id).ordered);
        let order = ordered_at.unwrap_or(0);
        let mut keys: HashMap<String, (i64, u64, i64)> = HashMap::new();
        for p in self
            .placements
            .iter()
            .filter(|p| p.scope == ids[order] && filter.admits(p.kind))
        {
            let seq = match ordered_at {
                Some(_) => p.seq.unwrap_or(i64::MAX),
                None => 0,
            };
            let k = (seq, p.began, p.pos);
            let e = keys.entry(p.chunk.clone()).or_insert(k);
            if k < *e {
                *e = k;
            }
        }
        for (i, id) in ids.iter().enumerate() {
            if i != order {
                keys.retain(|c, _| {
                    self.placements
                        .iter()
                        .any(|p| p.chunk == *c && p.scope == *id && filter.admits(p.kind))
                });
            }
        }
        let mut members: Vec<(i64, u64, i64, String)> = keys
            .into_iter()
            .map(|(c, (a, b, d))| (a, b, d, c))
            .collect();
        members.sort();
        Ok(members.into_iter().map(|(.., id)| self.item(&id)).collect())
    }

    fn item(&self, id: &str) -> Item {
        let c = &self.chunks[id];
        let mut ps: Vec<&MPlacement> = self.placements.iter().filter(|p| p.chunk == id).collect();
        ps.sort_by_key(|p| (p.began, p.pos));
        Item {
            id: id.to_owned(),
            name: c.name.clone(),
            spec: c.spec.clone(),
            body: c.body.clone(),
            placements: ps
                .iter()
                .map(|p| (p.scope.clone(), p.kind, p.seq))
                .collect(),
        }
    }
}

#[derive(Debug, PartialEq)]
struct Item {
    id: String,
    name: Option<String>,
    spec: Value,
    body: Value,
    placements: Vec<(String, PlacementType, Option<i64>)>,
}

fn read_store(
    db: &Substrate,
    ids: &[&str],
    filter: TypeFilter,
    as_of: Option<u64>,
    paged: bool,
) -> Result<Vec<Item>, &'static str> {
    let opts = ScopeOpts {
        kind: filter,
        as_of,
        limit: paged.then_some(1_000),
        ..ScopeOpts::default()
    };
    match db.scope(ids, &opts) {
        Ok(r) => Ok(r
            .chunks
            .into_iter()
            .map(|c| Item {
                id: c.id.clone(),
                name: c.name.clone(),
                spec: c.spec.to_value(),
                body: c.body_value(),
                placements: c
                    .placements
                    .iter()
                    .map(|p| (p.scope.clone(), p.kind, p.seq))
                    .collect(),
            })
            .collect()),
        Err(e) => Err(e.code()),
    }
}

// ---------------------------------------------------------------- generators

fn id() -> impl Strategy<Value = String> {
    prop::sample::select(IDS).prop_map(str::to_owned)
}

fn kind() -> impl Strategy<Value = PlacementType> {
    prop_oneof![Just(PlacementType::Instance), Just(PlacementType::Relates)]
}

fn spec() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({}),
        json!({"ordered": true}),
        json!({"required": ["k"]}),
        json!({"unique": ["k"]}),
        json!({"accepts": ["T"]}),
        json!({"accepts": ["U"], "ordered": true}),
        json!({"propagate": true, "accepts": ["T"]}),
        json!({"propagate": true, "ordered": true}),
        json!({"propagate": true, "required": ["k"], "accepts": ["T", "U"]}),
    ])
}

fn body() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({}),
        json!({"k": 1}),
        json!({"k": 2}),
        json!({"k": null}),
        json!({"k": "a", "j": [1]}),
        json!({"j": {"x": 1}}),
    ])
}

fn seq() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![4 => Just(None), 1 => (0i64..3).prop_map(Some)]
}

fn chunk_decl() -> impl Strategy<Value = ChunkDecl> {
    (
        id(),
        prop::option::of(prop_oneof![Just(None), Just(Some("n".to_owned()))]),
        prop::option::weighted(0.15, spec()),
        prop::option::weighted(0.6, body()),
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::collection::vec((id(), kind(), seq()), 0..3),
    )
        .prop_map(|(id, name, spec, body, merge, create, ps)| ChunkDecl {
            id: Some(id),
            name,
            spec,
            body,
            merge,
            create,
            placements: ps
                .into_iter()
                .map(|(scope, kind, seq)| NewPlacement { scope, kind, seq })
                .collect(),
        })
}

/// `O` is an ordered template no random spec changes: placing a scope
/// instance on it makes that scope ordered, removing the placement makes it
/// unordered again while its members keep their `seq`s.
const TEMPLATE: &str = "O";

/// Adds or removes a template placement, so scopes' orderedness changes.
fn orderedness_change() -> impl Strategy<Value = Declaration> {
    (prop::sample::select(vec!["A", "B", "x"]), any::<bool>()).prop_map(|(scope, add)| {
        let key = PlacementKey {
            chunk: scope.to_owned(),
            scope: TEMPLATE.to_owned(),
            kind: PlacementType::Instance,
        };
        let mut decl = Declaration::default();
        if add {
            decl.placements.push(PlacementDecl {
                chunk: key.chunk,
                scope: key.scope,
                kind: key.kind,
                seq: None,
            });
        } else {
            decl.remove.placements.push(key);
        }
        decl
    })
}

fn declaration() -> impl Strategy<Value = Declaration> {
    prop_oneof![3 => random_declaration(), 1 => orderedness_change()]
}

fn random_declaration() -> impl Strategy<Value = Declaration> {
    (
        prop::collection::vec(chunk_decl(), 0..3),
        prop::collection::vec((id(), id(), kind(), seq()), 0..2),
        // removals are rarer, or little would survive and most commits would be NOT_FOUND
        prop::option::weighted(0.2, (id(), id(), kind())),
        prop::option::weighted(0.04, prop::sample::select(vec!["z", "B"])),
    )
        .prop_map(|(chunks, placements, removal, removed)| Declaration {
            chunks,
            placements: placements
                .into_iter()
                .map(|(chunk, scope, kind, seq)| PlacementDecl {
                    chunk,
                    scope,
                    kind,
                    seq,
                })
                .collect(),
            remove: Removals {
                placements: removal
                    .into_iter()
                    .map(|(chunk, scope, kind)| PlacementKey { chunk, scope, kind })
                    .collect(),
                chunks: removed.into_iter().map(str::to_owned).collect(),
            },
        })
}

// ---------------------------------------------------------------- the property

/// Reads to compare: ids, placement type, and whether to page (a `limit`
/// takes the general path instead of a whole scope's fast one).
fn reads_to_compare() -> Vec<(Vec<&'static str>, TypeFilter, bool)> {
    let mut out: Vec<(Vec<&str>, TypeFilter, bool)> = IDS
        .iter()
        .map(|id| (vec![*id], TypeFilter::Both, false))
        .collect();
    out.push((vec![], TypeFilter::Both, false));
    out.push((vec!["A", "T"], TypeFilter::Both, false));
    out.push((vec!["T", "A"], TypeFilter::Both, false));
    out.push((vec!["B", "U"], TypeFilter::Instance, false));
    out.push((vec!["A"], TypeFilter::Relates, false));
    out.push((vec!["A"], TypeFilter::Both, true));
    out.push((vec!["B"], TypeFilter::Both, true));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_store_behaves_like_the_model(decls in prop::collection::vec(declaration(), 1..30)) {
        let (_dir, db) = super::common::empty();
        // seed: every id exists as a plain chunk, so placements have something to hit
        // A and B start with rules and members, so later body changes are judged
        let seed = Declaration::of(vec![
            ChunkDecl::with_id("T"),
            ChunkDecl::with_id("U"),
            ChunkDecl::with_id("A").spec(json!({"unique": ["k"]})),
            ChunkDecl::with_id("B").spec(json!({"required": ["k"]})),
            ChunkDecl::with_id("x").body(json!({"k": 1})).on(NewPlacement::instance("A")),
            ChunkDecl::with_id("y").body(json!({"k": 2})).on(NewPlacement::instance("B")),
            ChunkDecl::with_id("z").body(json!({"k": 2})).on(NewPlacement::instance("A")).on(NewPlacement::instance("B")),
            ChunkDecl::with_id(TEMPLATE).spec(json!({"propagate": true, "ordered": true})),
        ]);
        db.commit(seed.clone(), None).unwrap();
        let mut model = Model::default().apply(&seed, 1).unwrap();
        let mut history = vec![Model::default(), model.clone()];
        for decl in decls {
            let n = history.len() as u64;
            let expected = model.apply(&decl, n);
            let actual = db.commit(decl.clone(), None);
            match (&expected, &actual) {
                (Ok(next), Ok(c)) => {
                    prop_assert_eq!(c.id, n);
                    model = next.clone();
                    history.push(model.clone());
                }
                (Err(code), Err(e)) => prop_assert_eq!(*code, e.code(), "{:?}: {}", decl, e),
                _ => prop_assert!(false, "model {:?} vs store {:?} for {:?}", expected.as_ref().map(|_| ()), actual, decl),
            }
            for (ids, filter, paged) in reads_to_compare() {
                prop_assert_eq!(model.read(&ids, filter), read_store(&db, &ids, filter, None, paged), "read {:?} after {:?}", ids, decl);
            }
            // the kept member counts agree with the members
            for id in IDS.iter().chain([&TEMPLATE]) {
                let members = model.read(&[id], TypeFilter::Both).map_or(0, |m| m.len() as u64);
                prop_assert_eq!(db.read(|s| s.member_count(id)).unwrap(), members, "count of {} after {:?}", id, decl);
            }
        }
        for (n, past) in history.iter().enumerate() {
            for (ids, filter, paged) in reads_to_compare() {
                prop_assert_eq!(past.read(&ids, filter), read_store(&db, &ids, filter, Some(n as u64), paged), "as_of {} read {:?}", n, ids);
            }
        }
    }
}
