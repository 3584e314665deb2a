//! What can be wrong with a server entry or a tool a server lists, typed:
//! each error says what to set or what was skipped, in the words a person
//! reads.

use serde_json::Value;

/// Why a server entry cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A `${VAR}` with no value and no default.
    #[error("${{{var}}} is not set: set it in the environment, or write ${{{var}:-DEFAULT}}")]
    Unset {
        /// The variable.
        var: String,
    },
    /// A stdio server with no command.
    #[error("server `{server}` has no `command` (a stdio server) and no `url` (an http server)")]
    NoCommand {
        /// The server.
        server: String,
    },
    /// An HTTP server with no URL.
    #[error("server `{server}` is `{transport}` and has no `url`")]
    NoUrl {
        /// The server.
        server: String,
        /// Its transport as written.
        transport: String,
    },
    /// A bearer token read from a variable that is not set.
    #[error("server `{server}` reads its bearer token from ${var}, which is not set")]
    TokenUnset {
        /// The server.
        server: String,
        /// The variable.
        var: String,
    },
    /// A transport there is none of.
    #[error("server `{server}` has type `{kind}`: use `stdio`, `http` or `sse`")]
    Transport {
        /// The server.
        server: String,
        /// The type as written.
        kind: String,
    },
}

/// Why a tool a server lists is skipped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// A name that is empty, too long, or has spaces or control characters.
    #[error("the tool {name} has an invalid name")]
    InvalidName {
        /// The name as listed (JSON).
        name: Value,
    },
    /// An input schema that is not an object schema.
    #[error("the tool `{tool}` has an input schema that is not an object schema: {schema}")]
    Schema {
        /// The tool.
        tool: String,
        /// Its schema as listed.
        schema: Value,
    },
}
