//! Typed errors. Each carries a message a person can act on; `code()` is the
//! protocol's error code.

/// What went wrong with a substrate call. Nothing is half-done: a failed
/// commit changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A chunk, placement or commit that does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The declaration breaks a spec rule or a limit on content.
    #[error("{0}")]
    Validation(String),
    /// The request itself is malformed.
    #[error("{0}")]
    InvalidRequest(String),
    /// The storage failed (disk, SQLite); the message says what.
    #[error("{0}")]
    Storage(String),
}

impl Error {
    /// The protocol error code: `NOT_FOUND`, `VALIDATION_ERROR`,
    /// `INVALID_REQUEST` or `INTERNAL`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "NOT_FOUND",
            Error::Validation(_) => "VALIDATION_ERROR",
            Error::InvalidRequest(_) => "INVALID_REQUEST",
            Error::Storage(_) => "INTERNAL",
        }
    }

    /// The message alone.
    pub fn message(&self) -> &str {
        match self {
            Error::NotFound(m)
            | Error::Validation(m)
            | Error::InvalidRequest(m)
            | Error::Storage(m) => m,
        }
    }
}

#[cfg(feature = "storage")]
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error::Storage(format!("substrate storage failed: {e}"))
    }
}

#[cfg(feature = "postgres")]
impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Error {
        // the server's own words when it said any (never a credential)
        let said = match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => e.to_string(),
        };
        Error::Storage(format!("substrate storage (PostgreSQL) failed: {said}"))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
