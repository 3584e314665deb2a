//! The cached index: for each path a snapshot read, the stat data it had
//! and what it held — so the next snapshot reads only what changed since
//! (as git's index does). Saved as lines in a file of this machine's;
//! a missing or unreadable one is an empty index (everything read again).

use crate::State;
use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;

/// What `lstat` says that changes whenever a file's content or mode does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub ino: u64,
    pub mode: u32,
}

impl Stat {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt as _;
        Stat {
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }
}

/// One path's entry.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub stat: Stat,
    pub state: State,
    pub kept: bool,
}

/// Path → entry.
#[derive(Default)]
pub(crate) struct Index {
    pub entries: HashMap<String, Entry>,
    pub dirty: bool,
}

impl Index {
    /// The index saved at `file` (empty when there is none, or it cannot
    /// be read).
    pub(crate) fn load(file: &Path) -> Index {
        let Ok(text) = std::fs::read_to_string(file) else {
            return Index::default();
        };
        let entries = text.lines().filter_map(parse).collect();
        Index {
            entries,
            dirty: false,
        }
    }

    /// Writes it at `file` (replaced whole) when it changed.
    pub(crate) fn save(&self, file: &Path) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let dir = file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let (tmp, path) = crate::store::tempfile_in(dir)?;
        let mut out = std::io::BufWriter::new(tmp);
        for (name, e) in &self.entries {
            if name.contains(['\n', '\t']) {
                continue;
            }
            let s = &e.stat;
            writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                s.size,
                s.mtime.0,
                s.mtime.1,
                s.ctime.0,
                s.ctime.1,
                s.ino,
                s.mode,
                e.state.hash,
                e.state.size,
                u8::from(e.kept),
                name
            )?;
        }
        out.flush()?;
        drop(out);
        std::fs::rename(path, file)
    }
}

fn parse(line: &str) -> Option<(String, Entry)> {
    let mut parts = line.splitn(11, '\t');
    let mut num = || parts.next()?.parse::<i64>().ok();
    let (size, ms, mn, cs, cn, ino, mode) =
        (num()?, num()?, num()?, num()?, num()?, num()?, num()?);
    let hash = parts.next()?.to_owned();
    let state_size = parts.next()?.parse().ok()?;
    let kept = parts.next()? == "1";
    let name = parts.next()?.to_owned();
    let stat = Stat {
        size: u64::try_from(size).ok()?,
        mtime: (ms, mn),
        ctime: (cs, cn),
        ino: u64::try_from(ino).ok()?,
        mode: u32::try_from(mode).ok()?,
    };
    let state = State {
        hash,
        mode: stat.mode,
        size: state_size,
    };
    Some((name, Entry { stat, state, kept }))
}
