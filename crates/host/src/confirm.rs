//! Asking the person a line, wherever they are: whether to trust a
//! project (blocking, before a runtime starts), whether a command's
//! `` !`cmd` `` line runs (awaited). The host asks; a front end says how
//! (the terminal's is `tty::Tty`).

use std::future::Future;
use std::pin::Pin;

/// A line the person answers, to come (`None`: nobody answered).
pub type Line = Pin<Box<dyn Future<Output = Option<String>> + Send>>;

/// Who a host asks.
pub trait Confirm: Sync {
    /// Whether anyone is there to ask.
    fn present(&self) -> bool;
    /// Asks now, blocking, before a runtime starts.
    fn ask_now(&self, question: &str) -> Option<String>;
    /// Asks, answered when the person answers.
    fn ask(&self, question: String) -> Line;
}

/// No one to ask (a host no person watches): nothing is confirmed.
pub struct NoOne;

impl Confirm for NoOne {
    fn present(&self) -> bool {
        false
    }

    fn ask_now(&self, _question: &str) -> Option<String> {
        None
    }

    fn ask(&self, _question: String) -> Line {
        Box::pin(async { None })
    }
}
