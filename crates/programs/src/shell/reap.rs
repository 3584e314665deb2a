//! Ending everything a command started: every descendant, in the process
//! group or out of it (`setsid`, double forks). The shell program is
//! a child subreaper, so orphans of the command become its children and
//! stay findable by walking parent links in `/proc`.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::HashMap;

/// Makes this process the reaper of its orphaned descendants.
pub(crate) fn become_subreaper() {
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        // Its stderr is the process's stderr tail: the engine keeps it.
        eprintln!("shell: cannot become a child subreaper: {e}");
    }
}

/// Kills every live descendant of this process — its process group's and
/// those that left it — until none is left (a process may fork while it is
/// being killed).
pub(crate) fn kill_all() {
    let me = std::process::id() as i32;
    for _ in 0..100 {
        let descendants = descendants_of(me);
        if descendants.is_empty() {
            return;
        }
        for pid in descendants {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Live (not zombie) descendants of `root`, from `/proc`.
fn descendants_of(root: i32) -> Vec<i32> {
    let mut parent: HashMap<i32, i32> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let mut fields = stat
            .rsplit_once(") ")
            .map(|(_, r)| r)
            .unwrap_or("")
            .split(' ');
        let state = fields.next().unwrap_or("Z");
        let ppid = fields.next().and_then(|p| p.parse::<i32>().ok());
        if let (false, Some(ppid)) = (state == "Z" || state == "X", ppid) {
            parent.insert(pid, ppid);
        }
    }
    parent
        .keys()
        .copied()
        .filter(|pid| {
            let mut at = *pid;
            for _ in 0..4096 {
                match parent.get(&at) {
                    Some(&up) if up == root => return true,
                    Some(&up) if up > 0 && up != at => at = up,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}
