//! `BUILD_ID` is what `hc` checks before it trusts a `hc-contain` beside
//! it: it must cover every source file of the crate — the zygote's wire
//! format as much as the policy's — so a trampoline built from other
//! sources is never taken for this one.

use std::path::{Path, PathBuf};

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A copy of the crate's sources in a temp dir.
fn copy_of_sources() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(sources()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    dir
}

#[test]
fn the_build_id_is_the_hash_of_every_source_file_as_it_is() {
    let now = contain::build_id::of_sources(&sources(), env!("CARGO_PKG_VERSION")).unwrap();
    assert_eq!(contain::BUILD_ID, now);
    assert_ne!(contain::BUILD_ID, 0);
}

#[test]
fn a_changed_zygote_changes_the_build_id() {
    let copy = copy_of_sources();
    let version = env!("CARGO_PKG_VERSION");
    let before = contain::build_id::of_sources(copy.path(), version).unwrap();
    assert_eq!(before, contain::BUILD_ID, "the copy is the crate's sources");
    let zygote = copy.path().join("zygote.rs");
    let text = std::fs::read_to_string(&zygote).unwrap();
    // An older wire format: the zygote answering `pid` under another word.
    let older = text.replace("\"pid\"", "\"child\"");
    assert_ne!(older, text, "the zygote's wire format is in zygote.rs");
    std::fs::write(&zygote, older).unwrap();
    let after = contain::build_id::of_sources(copy.path(), version).unwrap();
    assert_ne!(after, before);
}
