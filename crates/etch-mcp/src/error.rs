//! How the bridge itself fails before it can speak the protocol.
//! A server's own failures are not here: they are answers to etch,
//! sentences naming the server.

/// A bridge that could not run.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server description etch passed was not readable.
    #[error(
        "the MCP bridge was given a server description it cannot read ({0}); etch and the bridge must be the same build"
    )]
    Spec(String),
    /// Its stdin or stdout failed.
    #[error("the MCP bridge lost its connection to etch: {0}")]
    Io(#[from] std::io::Error),
}
