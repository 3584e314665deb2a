//! How a contained start that could not be made says so: its exit code,
//! and its line on stderr (what the engine reports as the run's failure).

/// Exit code of a trampoline that could not contain the program.
pub const CONTAIN_FAILED: u8 = 125;

/// Says `why` and answers [`CONTAIN_FAILED`].
pub(crate) fn fail(why: &str) -> u8 {
    eprintln!("hermitcrab containment: {why}");
    CONTAIN_FAILED
}
