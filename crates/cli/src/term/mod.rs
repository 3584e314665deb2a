//! The terminal front end: `hc run` and `hc chat` as a person sees them —
//! a run shown as text (`text.rs`) with its progress line (`spinner.rs`),
//! what it asks put to the person (`answerer.rs`, on `/dev/tty` through
//! the crate's `tty.rs`). Colours (`style.rs`) and the terminal question
//! (`tty.rs`) sit at the crate's root: every command prints and asks too.

pub mod answerer;
pub mod attach;
pub mod background;
pub mod calls;
pub mod chat;
pub mod complete;
pub mod markdown;
pub mod request;
pub mod run;
pub mod spinner;
pub mod status;
pub mod text;
