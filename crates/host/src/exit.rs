//! Exit codes with a message: what a command's error carries so that
//! `main` ends with the code it names (2 for a usage error, 3 for a gate…).

/// An exit code with a message for the person.
#[derive(Debug)]
pub struct Exit {
    /// The code.
    pub code: u8,
    /// What to say (nothing when already said).
    pub message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// An error that ends `hc` with `code`, saying `message`.
pub fn exit(code: u8, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Exit {
        code,
        message: message.into(),
    })
}
