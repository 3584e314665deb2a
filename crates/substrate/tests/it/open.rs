//! Opening a store: many openers of one new file at once, and who may
//! read the file.

use crate::common;
use std::os::unix::fs::PermissionsExt;
use substrate::{ChunkDecl, Declaration, NewPlacement, Substrate};

#[test]
fn eight_openers_of_one_new_store_all_get_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("substrate.db");
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|scope| {
        let openers: Vec<_> = (0..8)
            .map(|i| {
                let (path, barrier) = (&path, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    let db = Substrate::open(path)?;
                    db.init(common::vocabulary())?;
                    db.commit(
                        Declaration::of(vec![
                            ChunkDecl::with_id(format!("s_{i}"))
                                .on(NewPlacement::instance("session")),
                        ]),
                        None,
                    )
                    .map(|_| ())
                })
            })
            .collect();
        for (i, opener) in openers.into_iter().enumerate() {
            opener
                .join()
                .unwrap()
                .unwrap_or_else(|e| panic!("opener {i}: {e}"));
        }
    });
    let db = Substrate::open(&path).unwrap();
    for i in 0..8 {
        assert!(db.read(|snap| snap.exists(&format!("s_{i}"))).unwrap());
    }
}

#[test]
fn a_new_store_and_its_log_are_readable_by_their_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("substrate.db");
    let db = Substrate::open(&path).unwrap();
    db.init(common::vocabulary()).unwrap();
    for file in [path.clone(), path.with_extension("db-wal")] {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
}
