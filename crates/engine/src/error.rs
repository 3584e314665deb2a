//! The engine's error: a protocol error code and a message for people.

use protocol::{ErrorBody, ErrorCode};

/// An operation the engine refused or could not do. Nothing is half-done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct EngineError {
    /// The protocol's code.
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
}

impl EngineError {
    /// An error with `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> EngineError {
        EngineError {
            code,
            message: message.into(),
        }
    }

    /// `BOUNDARY_VIOLATION`.
    pub fn boundary(message: impl Into<String>) -> EngineError {
        EngineError::new(ErrorCode::BoundaryViolation, message)
    }

    /// `INVALID_REQUEST`.
    pub fn invalid(message: impl Into<String>) -> EngineError {
        EngineError::new(ErrorCode::InvalidRequest, message)
    }

    /// `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> EngineError {
        EngineError::new(ErrorCode::NotFound, message)
    }

    /// `INTERNAL`.
    pub fn internal(message: impl Into<String>) -> EngineError {
        EngineError::new(ErrorCode::Internal, message)
    }
}

impl From<substrate::Error> for EngineError {
    fn from(e: substrate::Error) -> EngineError {
        EngineError::new(ErrorCode::from(&e), e.message())
    }
}

impl From<EngineError> for ErrorBody {
    fn from(e: EngineError) -> ErrorBody {
        ErrorBody::new(e.code, e.message)
    }
}

/// Shorthand.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
