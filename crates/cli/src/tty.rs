//! A question put to the person on the terminal (`/dev/tty`, whatever
//! stdin and stdout are), answered by a line — or by Ctrl-C, which stops
//! waiting at once instead of leaving a read behind that would take the
//! next line typed.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The person at the terminal, as the host asks them.
pub struct Tty;

impl crate::confirm::Confirm for Tty {
    fn present(&self) -> bool {
        std::io::IsTerminal::is_terminal(&std::io::stderr())
            && std::fs::File::open("/dev/tty").is_ok()
    }

    fn ask_now(&self, question: &str) -> Option<String> {
        ask_now(question)
    }

    fn ask(&self, question: String) -> crate::confirm::Line {
        Box::pin(ask(question))
    }
}

/// Whether a person is at a terminal (one to open, stderr on it), and
/// how trust is asked accordingly.
pub fn person() -> (bool, hc_host::trust::Ask<'static>) {
    let interactive = std::fs::File::open("/dev/tty").is_ok()
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let ask = if interactive {
        hc_host::trust::Ask::Person(&Tty)
    } else {
        hc_host::trust::Ask::Never
    };
    (interactive, ask)
}

/// How often the waiting read looks whether it was called off.
const POLL: Duration = Duration::from_millis(50);

/// Asks `question`; answers the line typed (without its newline; empty
/// when there is no terminal or it closed), or `None` at Ctrl-C.
pub async fn ask(question: String) -> Option<String> {
    ask_until(question, std::future::pending::<()>())
        .await
        .unwrap_or_default()
}

/// [`ask`], called off when `stop` ends first (another host answered):
/// its output then, and the read is taken back — no line typed later is
/// taken for this question's.
pub async fn ask_until<T>(
    question: String,
    stop: impl std::future::Future<Output = T>,
) -> Result<Option<String>, T> {
    waiting(stop, move |cancelled| read_answer(&question, cancelled)).await
}

/// [`ask_until`] answered by one key of `keys`, no Enter needed (as
/// Claude Code's questions are): the key, or `""` for Enter alone; what
/// else was typed with it is dropped, so it answers nothing later.
pub async fn ask_key_until<T>(
    question: String,
    keys: &'static str,
    stop: impl std::future::Future<Output = T>,
) -> Result<Option<String>, T> {
    waiting(stop, move |cancelled| read_key(&question, keys, cancelled)).await
}

/// A blocking read of the terminal (`read`), until it answers, Ctrl-C
/// (`None`), or `stop` (its output).
async fn waiting<T>(
    stop: impl std::future::Future<Output = T>,
    read: impl FnOnce(&AtomicBool) -> Option<String> + Send + 'static,
) -> Result<Option<String>, T> {
    let cancelled = Arc::new(AtomicBool::new(false));
    let cancel = Arc::clone(&cancelled);
    let reading = tokio::task::spawn_blocking(move || read(&cancelled));
    tokio::pin!(reading);
    tokio::select! {
        answer = &mut reading => Ok(answer.unwrap_or(Some(String::new()))),
        _ = tokio::signal::ctrl_c() => {
            cancel.store(true, Ordering::Relaxed);
            let _ = reading.await;
            Ok(None)
        }
        stopped = stop => {
            cancel.store(true, Ordering::Relaxed);
            let _ = reading.await;
            if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
                let _ = tty.write_all(b"\n");
            }
            Err(stopped)
        }
    }
}

/// Asks `question` now, blocking (before any runtime starts): the line
/// typed, or `None` when there is no terminal.
pub fn ask_now(question: &str) -> Option<String> {
    std::fs::File::open("/dev/tty").ok()?;
    read_answer(question, &AtomicBool::new(false))
}

/// One key of `keys` read from the terminal in non-canonical mode (no
/// Enter, no echo: the key is written back once taken); Enter alone is
/// `""`; any other key is passed over. The terminal's mode is put back
/// however the read ends.
fn read_key(question: &str, keys: &str, cancelled: &AtomicBool) -> Option<String> {
    use rustix::termios::{
        LocalModes, OptionalActions, QueueSelector, tcflush, tcgetattr, tcsetattr,
    };
    let Some(mut tty) = open_tty() else {
        return Some(String::new());
    };
    let Ok(before) = tcgetattr(&tty) else {
        // (not a terminal one can set: a line, as before)
        return read_answer(question, cancelled);
    };
    let mut raw = before.clone();
    raw.local_modes
        .remove(LocalModes::ICANON | LocalModes::ECHO);
    let _ = tcsetattr(&tty, OptionalActions::Now, &raw);
    let _ = tty.write_all(question.as_bytes());
    let _ = tty.flush();
    let mut byte = [0u8; 1];
    let key = loop {
        if cancelled.load(Ordering::Relaxed) {
            break None;
        }
        match tty.read(&mut byte) {
            Ok(0) => break Some(String::new()),
            Ok(_) if matches!(byte[0], b'\n' | b'\r') => break Some(String::new()),
            Ok(_) => {
                let typed = char::from(byte[0]).to_ascii_lowercase();
                if keys.contains(typed) {
                    break Some(typed.to_string());
                }
                // not a key: a line, as typed (a word is never taken for
                // its second letter), said back to be asked again
                let _ = tcsetattr(&tty, OptionalActions::Now, &before);
                let _ = tty.write_all(&byte);
                return rest_of_line(&mut tty, byte.to_vec(), cancelled);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break Some(String::new()),
        }
    };
    if let Some(key) = &key {
        let _ = tty.write_all(format!("{key}\n").as_bytes());
    }
    // (the rest of what came with the key — "y\n", "yes\n" — is dropped)
    std::thread::sleep(Duration::from_millis(20));
    let _ = tcflush(&tty, QueueSelector::IFlush);
    let _ = tcsetattr(&tty, OptionalActions::Now, &before);
    key
}

/// The terminal, opened non-blocking for reading and writing.
fn open_tty() -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/tty")
        .ok()
}

/// The blocking side: the terminal opened non-blocking, read until a
/// line is complete (a terminal in canonical mode hands over whole lines)
/// or the question is called off.
fn read_answer(question: &str, cancelled: &AtomicBool) -> Option<String> {
    let Some(mut tty) = open_tty() else {
        return Some(String::new());
    };
    let _ = tty.write_all(question.as_bytes());
    let _ = tty.flush();
    rest_of_line(&mut tty, Vec::new(), cancelled)
}

/// The line under way on `tty` (`got` of it read already), to its end.
fn rest_of_line(
    tty: &mut std::fs::File,
    mut got: Vec<u8>,
    cancelled: &AtomicBool,
) -> Option<String> {
    let mut buf = [0u8; 1024];
    loop {
        if cancelled.load(Ordering::Relaxed) {
            return None;
        }
        match tty.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.contains(&b'\n') {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let line = String::from_utf8_lossy(&got);
    Some(line.lines().next().unwrap_or("").to_owned())
}
