//! A progress line on stderr during long waits (the model thinking, a long
//! tool), on a terminal only: drawn after a quiet moment, cleared before
//! anything else is written. With `NO_COLOR` it clears with spaces, not an
//! escape code.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How long nothing is written before the line appears.
const QUIET: Duration = Duration::from_millis(400);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The progress line.
pub struct Spinner {
    on: bool,
    plain: bool,
    /// The width drawn, when the line is shown.
    shown: Option<usize>,
    frame: usize,
    quiet_since: Instant,
}

impl Spinner {
    /// A spinner that draws only when stderr is a terminal.
    pub fn new() -> Spinner {
        Spinner {
            on: std::io::stderr().is_terminal(),
            plain: crate::style::no_color(),
            shown: None,
            frame: 0,
            quiet_since: Instant::now(),
        }
    }

    /// Whether it draws at all (stderr is a terminal).
    pub fn on(&self) -> bool {
        self.on
    }

    /// Draws the line saying `label` if nothing was written for a while,
    /// with the time since then.
    pub fn tick(&mut self, label: &str) {
        self.tick_since(label, self.quiet_since);
    }

    /// Draws the line saying `label` if nothing was written for a while,
    /// with the time since `since` (a tool's start).
    pub fn tick_since(&mut self, label: &str, since: Instant) {
        let quiet = self.quiet_since.elapsed();
        if !self.on || quiet < QUIET {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let line = format!(
            "{} {label} {}s",
            FRAMES[self.frame],
            since.elapsed().as_secs()
        );
        let width = line.chars().count();
        let pad = self.shown.unwrap_or(0).saturating_sub(width);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}{}", " ".repeat(pad));
        let _ = err.flush();
        self.shown = Some(width.max(self.shown.unwrap_or(0)));
    }

    /// Something else is about to be written: the line goes, and the
    /// quiet moment starts again.
    pub fn clear(&mut self) {
        self.quiet_since = Instant::now();
        let Some(width) = self.shown.take() else {
            return;
        };
        let mut err = std::io::stderr().lock();
        let _ = if self.plain {
            write!(err, "\r{}\r", " ".repeat(width))
        } else {
            write!(err, "\r\x1b[K")
        };
        let _ = err.flush();
    }
}
