#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use std::os::unix::fs::PermissionsExt as _;

fn tree(root: &Path, dir: &Path) -> Tree {
    Tree::open(
        root,
        dir,
        Limits {
            file_bytes: 1024,
            run_bytes: 1 << 20,
        },
    )
}

/// Every path under `root` (but `.git`), with its mode and content.
fn copy_of(root: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for e in ignore::WalkBuilder::new(root)
        .hidden(false)
        .ignore(false)
        .git_ignore(false)
        .build()
        .flatten()
    {
        let rel = e.path().strip_prefix(root).unwrap();
        if rel.as_os_str().is_empty() || rel.starts_with(".git") {
            continue;
        }
        let meta = std::fs::symlink_metadata(e.path()).unwrap();
        let content = if meta.is_file() {
            std::fs::read(e.path()).unwrap()
        } else if meta.file_type().is_symlink() {
            std::fs::read_link(e.path())
                .unwrap()
                .into_os_string()
                .into_encoded_bytes()
        } else {
            Vec::new()
        };
        out.insert(
            walk::slashed(rel),
            (std::os::unix::fs::MetadataExt::mode(&meta), content),
        );
    }
    out
}

/// Puts each effect's before back, as a rewind does (deepest first for
/// what goes, parents first for what comes).
fn undo(tree: &Tree, effects: &[Effect]) {
    for e in effects.iter().rev() {
        if e.before.is_none() {
            restore::put(tree.root(), &e.path, restore::Put::Absent).unwrap();
        }
    }
    for e in effects {
        if let (Some(hash), Some(mode)) = (&e.before, e.mode) {
            let content = if e.is_dir() {
                Vec::new()
            } else {
                tree.kept(hash).unwrap()
            };
            restore::put(tree.root(), &e.path, restore::Put::of(mode, &content)).unwrap();
        }
    }
}

#[test]
fn whatever_a_shell_did_is_put_back_byte_for_byte_with_modes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let state = dir.path().join("state");
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(root.join("src/deep/b.rs"), "fn b() {}\n").unwrap();
    std::fs::write(root.join("run.sh"), "echo hi\n").unwrap();
    std::fs::write(root.join("old.txt"), "old\n").unwrap();
    std::os::unix::fs::symlink("src/a.rs", root.join("link")).unwrap();
    let copy = copy_of(&root);
    let t = tree(&root, &state);
    let before = t.snapshot(Scope::Tree(vec![String::new()]));
    // what a shell might do
    std::fs::remove_dir_all(root.join("src/deep")).unwrap();
    std::fs::rename(root.join("old.txt"), root.join("new.txt")).unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("src/a.rs"), [0u8, 159, 146, 150]).unwrap();
    std::fs::create_dir(root.join("made")).unwrap();
    std::fs::write(root.join("made/c"), "c").unwrap();
    std::fs::remove_file(root.join("link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
    let effects = t.effects(&before);
    let paths: Vec<&str> = effects.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "link",
            "made",
            "made/c",
            "new.txt",
            "old.txt",
            "run.sh",
            "src/a.rs",
            "src/deep",
            "src/deep/b.rs"
        ]
    );
    assert!(effects.iter().all(Effect::restorable), "{effects:?}");
    undo(&t, &effects);
    assert_eq!(copy_of(&root), copy);
}

#[test]
fn a_file_over_the_cap_is_hashed_and_said_not_restorable() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("big"), vec![7u8; 4096]).unwrap();
    let t = tree(&root, &dir.path().join("state"));
    let before = t.snapshot(Scope::Tree(vec![String::new()]));
    std::fs::write(root.join("big"), "small").unwrap();
    let effects = t.effects(&before);
    assert_eq!(effects.len(), 1);
    assert_eq!(
        effects[0].before.as_deref(),
        Some(sha256_hex(&[7u8; 4096]).as_str())
    );
    assert!(
        effects[0]
            .unrestorable
            .as_deref()
            .unwrap()
            .contains("4096 bytes"),
        "{effects:?}"
    );
}

#[test]
fn ignored_output_is_not_walked_and_the_index_saves_reading_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(root.join("target/out"), "x").unwrap();
    std::fs::write(root.join("kept"), "k").unwrap();
    let state = dir.path().join("state");
    let limits = Limits {
        file_bytes: 1024,
        run_bytes: 1 << 20,
    };
    let walked = Tree::walking(&root, &dir.path().join("walked"), limits);
    let snap = walked.snapshot(Scope::Tree(vec![String::new()]));
    assert!(snap.state("target/out").is_none());
    assert!(snap.state("kept").is_some());
    let t = tree(&root, &state);
    let before = t.snapshot(Scope::Tree(vec![String::new()]));
    std::fs::write(root.join("target/out"), "y").unwrap();
    std::fs::create_dir_all(root.join("target/deeper")).unwrap();
    std::fs::write(root.join("target/deeper/o"), "z").unwrap();
    assert!(
        t.effects(&before).is_empty(),
        "ignored output changed nothing"
    );
    t.save();
    // a new engine's tree reads its index: the kept file is not read again
    // (its content taken away, its hash is still known)
    let hash = sha256_hex(b"k");
    std::fs::remove_file(state.join("objects").join(&hash[..2]).join(&hash[2..])).unwrap();
    let again = Tree::walking(&root, &state, limits);
    let snap = again.snapshot(Scope::Tree(vec![String::new()]));
    assert_eq!(snap.state("kept").unwrap().hash, hash);
    assert!(again.kept(&hash).is_none());
}

#[test]
fn a_symlink_on_the_way_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("src")).unwrap();
    let err = restore::put(&root, "src/x", restore::Put::File(b"x", 0o100_644)).unwrap_err();
    assert!(err.contains("never followed"), "{err}");
    assert!(!outside.join("x").exists());
    let err = restore::put(&root, "../x", restore::Put::File(b"x", 0o100_644)).unwrap_err();
    assert!(err.contains("not a plain path"), "{err}");
}

#[test]
fn a_named_path_is_looked_at_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a"), "a").unwrap();
    let t = tree(&root, &dir.path().join("state"));
    let scope = t.scope_of_paths(&[root.join("a").to_string_lossy().into_owned(), "b".into()]);
    assert_eq!(scope, Scope::Paths(vec!["a".into(), "b".into()]));
    let before = t.snapshot(scope);
    std::fs::write(root.join("a"), "A").unwrap();
    std::fs::write(root.join("b"), "B").unwrap();
    std::fs::write(root.join("c"), "C").unwrap();
    let effects = t.effects(&before);
    let paths: Vec<&str> = effects.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["a", "b"]);
    assert_eq!(effects[1].before, None);
}

/// One change a program might make, on a few names.
#[derive(Clone, Debug)]
enum Op {
    Write(usize, u8),
    Append(usize),
    Remove(usize),
    Mkdir(usize),
    RemoveDir(usize),
    Rename(usize, usize),
    RenameDir(usize, usize),
    Chmod(usize),
    Link(usize, usize),
}

const NAMES: [&str; 6] = ["a", "d/b", "d/e/c", "x/y", "d/e", "ignored/z"];
const DIRS: [&str; 4] = ["d", "d/e", "x", "w"];

fn apply(root: &Path, op: &Op) {
    let file = |i: usize| root.join(NAMES[i % NAMES.len()]);
    let dir = |i: usize| root.join(DIRS[i % DIRS.len()]);
    let parent = |p: &Path| {
        let _ = std::fs::create_dir_all(p.parent().unwrap());
    };
    let _ = match op {
        Op::Write(i, b) => {
            parent(&file(*i));
            std::fs::write(file(*i), [*b; 3])
        }
        Op::Append(i) => std::fs::OpenOptions::new()
            .append(true)
            .open(file(*i))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"+")),
        Op::Remove(i) => std::fs::remove_file(file(*i)),
        Op::Mkdir(i) => std::fs::create_dir_all(dir(*i)),
        Op::RemoveDir(i) => std::fs::remove_dir_all(dir(*i)),
        Op::Rename(i, j) => std::fs::rename(file(*i), file(*j)),
        Op::RenameDir(i, j) => std::fs::rename(dir(*i), dir(*j)),
        Op::Chmod(i) => std::fs::set_permissions(file(*i), std::fs::Permissions::from_mode(0o700)),
        Op::Link(i, j) => std::os::unix::fs::symlink(NAMES[*j % NAMES.len()], file(*i)),
    };
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        (0..6usize, any::<u8>()).prop_map(|(i, b)| Op::Write(i, b)),
        (0..6usize).prop_map(Op::Append),
        (0..6usize).prop_map(Op::Remove),
        (0..4usize).prop_map(Op::Mkdir),
        (0..4usize).prop_map(Op::RemoveDir),
        (0..6usize, 0..6usize).prop_map(|(i, j)| Op::Rename(i, j)),
        (0..4usize, 0..4usize).prop_map(|(i, j)| Op::RenameDir(i, j)),
        (0..6usize).prop_map(Op::Chmod),
        (0..6usize, 0..6usize).prop_map(|(i, j)| Op::Link(i, j)),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// The watched tree finds exactly what a walk finds, run after run.
    #[test]
    fn watching_finds_what_a_walk_finds(runs in proptest::collection::vec(proptest::collection::vec(op(), 1..8), 1..5)) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("ignored")).unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        let limits = Limits { file_bytes: 1024, run_bytes: 1 << 20 };
        let watched = Tree::open(&root, &dir.path().join("w"), limits);
        let walked = Tree::walking(&root, &dir.path().join("k"), limits);
        let whole = || Scope::Tree(vec![String::new()]);
        for ops in runs {
            let (a, b) = (watched.snapshot(whole()), walked.snapshot(whole()));
            for op in &ops {
                apply(&root, op);
            }
            proptest::prop_assert_eq!(watched.effects(&a), walked.effects(&b), "after {:?}", ops);
        }
    }
}

#[test]
fn a_file_a_run_made_a_directory_comes_back_and_nothing_is_put_in_git() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("f"), "file\n").unwrap();
    let copy = copy_of(&root);
    let t = tree(&root, &dir.path().join("state"));
    let before = t.snapshot(Scope::Tree(vec![String::new()]));
    std::fs::remove_file(root.join("f")).unwrap();
    std::fs::create_dir(root.join("f")).unwrap();
    std::fs::write(root.join("f/x"), "x").unwrap();
    undo(&t, &t.effects(&before));
    assert_eq!(copy_of(&root), copy);
    let err = restore::put(
        &root,
        ".git/hooks/pre-commit",
        restore::Put::File(b"x", 0o100_755),
    )
    .unwrap_err();
    assert!(err.contains(".git"), "{err}");
    assert!(!root.join(".git").exists());
}

#[test]
fn a_fifo_is_looked_at_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let made = std::process::Command::new("mkfifo")
        .arg(root.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let state = restore::current(&root, "pipe").unwrap().unwrap();
    assert_eq!(state.hash, "");
    assert!(restore::read(&root, "pipe", 1024).is_none());
}
