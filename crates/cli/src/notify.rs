//! Telling the person something happened while they look elsewhere: a
//! background agent ended or waits for an answer. On the terminal — the
//! bell, and OSC 9 (iTerm2, Windows Terminal, kitty, WezTerm) and OSC 777
//! (rxvt, foot, GNOME's terminals) desktop notifications, which terminals
//! that know neither ignore — and, where a desktop session exists,
//! `notify-send`. The text is the row's own, control characters taken out.

use hc_host::agents::AgentRow;
use std::io::Write as _;

/// Whether `status` is worth telling: an end, or a question.
fn worth_telling(status: &str) -> bool {
    !matches!(status, "queued" | "running" | "empty")
}

/// Tells the person that `row` changed to its status, when that is an end
/// or a question.
pub fn changed(row: &AgentRow) {
    if !worth_telling(&row.status) {
        return;
    }
    let what = match (&row.status[..], &row.question) {
        ("waiting", Some(q)) => format!("waits for you: {q}"),
        (status, _) => status.to_owned(),
    };
    let text = hc_host::text::shown(&format!("{} {what} — {}", row.id, row.title)).into_owned();
    // `;` ends an OSC 777 field: the text keeps none
    let body: String = text
        .chars()
        .filter(|c| *c != ';' && !c.is_control())
        .collect();
    terminal(&body);
    desktop(&body);
}

/// The bell and the two desktop-notification escapes, on the terminal.
fn terminal(body: &str) {
    let line = format!("\x07\x1b]9;hermitcrab: {body}\x07\x1b]777;notify;hermitcrab;{body}\x07");
    let tty = std::fs::OpenOptions::new().write(true).open("/dev/tty");
    let written = match tty {
        Ok(mut tty) => tty.write_all(line.as_bytes()).and_then(|()| tty.flush()),
        Err(e) => Err(e),
    };
    if written.is_err() && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// `notify-send`, where a desktop session exists and it is installed; a
/// failure is nothing to say.
fn desktop(body: &str) {
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !desktop {
        return;
    }
    let spawned = std::process::Command::new("notify-send")
        .args(["--app-name=hermitcrab", "hermitcrab", body])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = spawned {
        std::thread::spawn(move || child.wait());
    }
}
