//! The substrate's figures (docs/performance.md):
//!
//! * `append/*`: one chunk appended to an ordered session (chunk + 2
//!   placements, one commit), through the substrate and as raw rusqlite
//!   writing the same rows in the same transaction shape.
//! * `scope/*`: a 1,000-member ordered session; a 100-member scope in a
//!   store of 1,000,000 chunks (and in a small store, to show no growth).
//! * `match/*`: full-text over 100,000 chunks.
//! * `as_of/*`: the 1,000-member read at head and as of an earlier commit.
//!
//! Large stores are built once into `target/bench-data/` and reused.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::hint::black_box;
use std::path::PathBuf;
use substrate::{ChunkDecl, Declaration, NewPlacement, Options, ScopeOpts, Substrate};

fn data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens `target/bench-data/NAME.db`, built by `build` on first use (a
/// `.ready` marker holds what `build` returned, so later runs skip it).
fn stored(name: &str, build: impl FnOnce(&Substrate) -> String) -> (Substrate, String) {
    let path = data_dir().join(format!("{name}.db"));
    let marker = data_dir().join(format!("{name}.ready"));
    if !marker.exists() {
        let _ = std::fs::remove_file(&path);
        let db = Substrate::open(&path).unwrap();
        db.init(vocabulary()).unwrap();
        let note = build(&db);
        std::fs::write(&marker, note).unwrap();
    }
    let note = std::fs::read_to_string(&marker).unwrap();
    (Substrate::open(&path).unwrap(), note)
}

/// Sessions and prompts, shaped as the agent defines them (the substrate
/// knows none of it).
fn vocabulary() -> Vec<ChunkDecl> {
    vec![
        ChunkDecl::with_id("session")
            .spec(json!({"propagate": true, "ordered": true, "accepts": ["prompt"]})),
        ChunkDecl::with_id("prompt").spec(json!({"required": ["text"]})),
    ]
}

fn prompt(session: &str, text: String) -> ChunkDecl {
    ChunkDecl::generated()
        .body(json!({ "text": text }))
        .on(NewPlacement::instance(session))
        .on(NewPlacement::instance("prompt"))
}

fn new_session(db: &Substrate, id: &str) {
    db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id(id).on(NewPlacement::instance("session")),
        ]),
        None,
    )
    .unwrap();
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = Substrate::open(dir.path().join("append.db")).unwrap();
    db.init(vocabulary()).unwrap();
    new_session(&db, "s");
    let mut i = 0u64;
    c.bench_function("append/substrate", |b| {
        b.iter(|| {
            i += 1;
            db.commit(
                Declaration::of(vec![prompt("s", format!("message {i}"))]),
                None,
            )
            .unwrap()
        })
    });

    // The same rows, same transaction shape, same schema, straight through rusqlite.
    let raw_path = dir.path().join("raw.db");
    drop(Substrate::open(&raw_path).unwrap());
    let mut conn = rusqlite::Connection::open(&raw_path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    let mut n = 0i64;
    c.bench_function("append/raw_rusqlite", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("c_{n:026}");
            let body = json!({ "text": format!("message {n}") }).to_string();
            let tx = conn.transaction().unwrap();
            let placements = format!(
                r#"[{{"scope":"s","type":"instance","seq":{n}}},{{"scope":"prompt","type":"instance","seq":null}}]"#
            );
            tx.prepare_cached(
                "INSERT INTO chunks (vid, id, key, name, spec, body, placements, began) \
                 VALUES (?1, ?2, ?1, NULL, '{}', ?3, ?4, ?1)",
            )
            .unwrap()
            .execute(rusqlite::params![n, id, body, placements])
            .unwrap();
            tx.prepare_cached("INSERT INTO chunk_text (rowid, text) VALUES (?1, ?2)")
                .unwrap()
                .execute(rusqlite::params![n, format!("message {n}")])
                .unwrap();
            for (scope, seq) in [("s", Some(n)), ("prompt", None)] {
                tx.prepare_cached("INSERT INTO placements (chunk, ckey, scope, kind, seq, began, pos) VALUES (?1, ?4, ?2, 0, ?3, ?4, 1)")
                    .unwrap()
                    .execute(rusqlite::params![id, scope, seq, n])
                    .unwrap();
            }
            tx.prepare_cached("INSERT INTO commits (id, parent_id, timestamp, dispatch_id, record) VALUES (?1, ?2, '2026-01-01T00:00:00.000Z', NULL, '{}')")
                .unwrap()
                .execute(rusqlite::params![n, n - 1])
                .unwrap();
            tx.commit().unwrap();
        })
    });
}

/// A session of `members` prompts, then `updates` later body changes to
/// half of them (history the as_of read must see past). Returns the db and
/// the commit right after the session was complete.
fn session_store(name: &str, members: usize, updates: bool) -> (Substrate, u64) {
    let (db, complete) = stored(name, |db| {
        new_session(db, "s");
        let mut ids = Vec::new();
        for i in 0..members {
            let decl = Declaration::of(vec![prompt("s", format!("message number {i}"))]);
            ids.push(db.commit(decl, None).unwrap().created[0].clone());
        }
        let complete = db.head().unwrap();
        if updates {
            for id in ids.iter().step_by(2) {
                let edit = ChunkDecl::with_id(id).merge_body(json!({"text": "edited"}));
                db.commit(Declaration::of(vec![edit]), None).unwrap();
            }
        }
        complete.to_string()
    });
    (db, complete.parse().unwrap())
}

/// The same store opened without the version cache: every read assembles
/// every item from SQLite (the cold path).
fn uncached(db: &Substrate) -> Substrate {
    Substrate::open_with(
        db.path(),
        Options {
            cache_bytes: 0,
            ..Options::default()
        },
    )
    .unwrap()
}

/// `scopes` scopes of 100 members each: 100 × `scopes` chunks.
fn wide_store(name: &str, scopes: usize) -> Substrate {
    stored(name, |db| {
        for batch in 0..scopes.div_ceil(100) {
            let mut chunks = Vec::new();
            for s in batch * 100..((batch + 1) * 100).min(scopes) {
                let scope = format!("scope/{s}");
                chunks.push(ChunkDecl::with_id(&scope).name(format!("scope {s}")));
                for m in 0..100 {
                    chunks.push(
                        ChunkDecl::generated()
                            .body(json!({"text": format!("member {m} of scope {s}")}))
                            .on(NewPlacement::instance(&scope)),
                    );
                }
            }
            db.commit(Declaration::of(chunks), None).unwrap();
        }
        String::new()
    })
    .0
}

fn scope_reads(c: &mut Criterion) {
    let (db, _) = session_store("session-1000", 1000, false);
    let opts = ScopeOpts::default();
    c.bench_function("scope/ordered_session_1000", |b| {
        b.iter(|| black_box(db.scope(&["s"], &opts).unwrap()))
    });
    let cold = uncached(&db);
    c.bench_function("scope/ordered_session_1000_uncached", |b| {
        b.iter(|| black_box(cold.scope(&["s"], &opts).unwrap()))
    });
    // Random scopes, no version cache: the cold path, like for like across
    // store sizes (the cache would hold all of the small store and little of
    // the large one).
    let small = uncached(&wide_store("store-10k", 100));
    let mut rng = StdRng::seed_from_u64(1);
    c.bench_function("scope/100_members_in_10k_chunks", |b| {
        b.iter_batched(
            || format!("scope/{}", rng.random_range(0..100)),
            |id| black_box(small.scope(&[id], &opts).unwrap()),
            BatchSize::SmallInput,
        )
    });
    // built on first use only, so a filtered run does not pay for it
    let big = std::sync::OnceLock::new();
    c.bench_function("scope/100_members_in_1m_chunks", |b| {
        let big = big.get_or_init(|| uncached(&wide_store("store-1m", 10_000)));
        b.iter_batched(
            || format!("scope/{}", rng.random_range(0..10_000)),
            |id| black_box(big.scope(&[id], &opts).unwrap()),
            BatchSize::SmallInput,
        )
    });
}

const WORDS: usize = 5000;

fn text_store() -> Substrate {
    stored("text-100k", |db| {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..100 {
            let chunks = (0..1000)
                .map(|_| {
                    let words: Vec<String> = (0..20)
                        .map(|_| format!("w{}", rng.random_range(0..WORDS)))
                        .collect();
                    ChunkDecl::generated().body(json!({"text": words.join(" ")}))
                })
                .collect();
            db.commit(Declaration::of(chunks), None).unwrap();
        }
        String::new()
    })
    .0
}

fn full_text(c: &mut Criterion) {
    let db = text_store();
    let mut rng = StdRng::seed_from_u64(3);
    // one word: ~400 of 100,000 chunks match; the first 100 come back
    c.bench_function("match/one_word_in_100k", |b| {
        b.iter_batched(
            || ScopeOpts {
                match_: Some(format!("w{}", rng.random_range(0..WORDS))),
                ..ScopeOpts::default()
            },
            |opts| black_box(db.scope::<&str>(&[], &opts).unwrap()),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("match/two_words_in_100k", |b| {
        b.iter_batched(
            || {
                let q = format!(
                    "w{} OR w{}",
                    rng.random_range(0..WORDS),
                    rng.random_range(0..WORDS)
                );
                ScopeOpts {
                    match_: Some(q),
                    limit: Some(20),
                    ..ScopeOpts::default()
                }
            },
            |opts| black_box(db.scope::<&str>(&[], &opts).unwrap()),
            BatchSize::SmallInput,
        )
    });
}

fn as_of(c: &mut Criterion) {
    let (db, complete) = session_store("session-1000-history", 1000, true);
    let head = ScopeOpts::default();
    let past = ScopeOpts {
        as_of: Some(complete),
        ..ScopeOpts::default()
    };
    c.bench_function("as_of/session_1000_head", |b| {
        b.iter(|| black_box(db.scope(&["s"], &head).unwrap()))
    });
    c.bench_function("as_of/session_1000_past", |b| {
        b.iter(|| black_box(db.scope(&["s"], &past).unwrap()))
    });
}

criterion_group!(benches, append, scope_reads, full_text, as_of);
criterion_main!(benches);
