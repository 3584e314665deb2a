//! Colour and width for what a person reads: colours only on a terminal,
//! and never with `NO_COLOR` (what text may show: `text.rs`).

use std::io::IsTerminal;
use std::sync::OnceLock;

/// Whether `NO_COLOR` forbids colours (and every other escape code).
pub fn no_color() -> bool {
    static NO_COLOR: OnceLock<bool> = OnceLock::new();
    *NO_COLOR.get_or_init(|| std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()))
}

/// Whether stdout gets colours (asked once: every line of a trace asks).
pub fn colour() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| !no_color() && std::io::stdout().is_terminal())
}

/// `text` in SGR `code` when colours are on.
pub fn paint(code: &str, text: &str) -> String {
    paint_if(colour(), code, text)
}

/// `text` in SGR `code` when stderr gets colours.
pub fn paint_err(code: &str, text: &str) -> String {
    static ON: OnceLock<bool> = OnceLock::new();
    let on = *ON.get_or_init(|| !no_color() && std::io::stderr().is_terminal());
    paint_if(on, code, text)
}

/// `text` in SGR `code` when `on`.
pub fn paint_if(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// Dim.
pub fn dim(text: &str) -> String {
    paint("2", text)
}

/// Bold.
pub fn bold(text: &str) -> String {
    paint("1", text)
}

/// Green (success).
pub fn ok(text: &str) -> String {
    paint("32", text)
}

/// Yellow (refused, not failed).
pub fn warn(text: &str) -> String {
    paint("33", text)
}

/// Red (failure).
pub fn bad(text: &str) -> String {
    paint("31", text)
}

pub use crate::text::{cut, short_ids, shown};
