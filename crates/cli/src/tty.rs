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
/// `""`; any other key begins a line, read as a line. The terminal's
/// mode is put back however the read ends.
fn read_key(question: &str, keys: &str, cancelled: &AtomicBool) -> Option<String> {
    use rustix::termios::{LocalModes, QueueSelector, tcflush};
    let Some(mut tty) = open_tty() else {
        return Some(String::new());
    };
    let Some(_back) = Mode::set(&tty, |m| m.remove(LocalModes::ICANON | LocalModes::ECHO)) else {
        // (not a terminal one can set: a line, as before)
        return read_answer(question, cancelled);
    };
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
                let _line = Mode::set(&tty, |m| m.insert(LocalModes::ICANON | LocalModes::ECHO));
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
    key
}

/// The terminal's mode changed, put back as it was when dropped.
struct Mode {
    tty: std::fs::File,
    before: rustix::termios::Termios,
}

impl Mode {
    /// `tty`'s local modes as `change` makes them (none: it is no
    /// terminal whose mode can be set).
    fn set(
        tty: &std::fs::File,
        change: impl FnOnce(&mut rustix::termios::LocalModes),
    ) -> Option<Mode> {
        use rustix::termios::{OptionalActions, tcgetattr, tcsetattr};
        let before = tcgetattr(tty).ok()?;
        let mut now = before.clone();
        change(&mut now.local_modes);
        tcsetattr(tty, OptionalActions::Now, &now).ok()?;
        Some(Mode {
            tty: tty.try_clone().ok()?,
            before,
        })
    }
}

impl Drop for Mode {
    fn drop(&mut self) {
        let now = rustix::termios::OptionalActions::Now;
        let _ = rustix::termios::tcsetattr(&self.tty, now, &self.before);
    }
}

/// The terminal while a run goes on (a [`RunKeys`] is held): its keys.
static KEYS: std::sync::Mutex<Option<std::fs::File>> = std::sync::Mutex::new(None);

/// What was typed while a run went on, but Esc: the next prompt's start.
static TYPED: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

/// The terminal read key by key while a run goes on, so that Esc
/// interrupts it (as in Claude Code); put back when dropped.
pub struct RunKeys {
    _mode: Mode,
}

impl RunKeys {
    /// Keys read while the run goes on, when a person is at a terminal.
    pub fn hold(interactive: bool) -> Option<RunKeys> {
        use rustix::termios::LocalModes;
        if !interactive || !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            return None;
        }
        let tty = open_tty()?;
        let mode = Mode::set(&tty, |m| m.remove(LocalModes::ICANON | LocalModes::ECHO))?;
        *KEYS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(tty);
        Some(RunKeys { _mode: mode })
    }
}

impl Drop for RunKeys {
    fn drop(&mut self) {
        *KEYS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

/// Whether a run's keys are read now (a [`RunKeys`] is held).
pub fn keys_held() -> bool {
    KEYS.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_some()
}

/// Whether Esc alone was pressed since last looked (an arrow key's
/// sequence is no Esc); what else was typed is kept for the next prompt.
pub fn esc_pressed() -> bool {
    let mut keys = KEYS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(tty) = keys.as_mut() else {
        return false;
    };
    let mut buf = [0u8; 256];
    match tty.read(&mut buf) {
        Ok(n) if buf[..n] == [0x1b] => true,
        Ok(n) => {
            let mut typed = TYPED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for byte in &buf[..n] {
                match byte {
                    // (a line typed ahead is a line: Enter kept)
                    b'\r' | b'\n' => typed.push(b'\n'),
                    0x7f | 0x08 => drop(typed.pop()),
                    b if *b >= b' ' => typed.push(*b),
                    _ => {}
                }
            }
            false
        }
        Err(_) => false,
    }
}

/// What was typed while the last run went on (Esc and control keys left
/// out, a line's end as `\n`), taken.
pub fn take_typed() -> String {
    let mut typed = TYPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    String::from_utf8_lossy(&std::mem::take(&mut *typed)).into_owned()
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
    // (a line, typed and seen, whatever mode a run left the terminal in)
    let _line = Mode::set(&tty, |m| {
        m.insert(rustix::termios::LocalModes::ICANON | rustix::termios::LocalModes::ECHO);
    });
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
