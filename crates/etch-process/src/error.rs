//! What can go wrong with a background process, in words the model can
//! act on.

/// A refused or failed process operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    /// As many processes as allowed run already.
    #[error(
        "{max} background processes run already, the most a session may have ([process] max_running); stop one with the process tool (kill) first"
    )]
    TooMany {
        /// The limit.
        max: usize,
    },
    /// No process has this id.
    #[error("there is no background process {id}; {}", known_list(.known))]
    Unknown {
        /// The id asked for.
        id: String,
        /// The ids kept.
        known: Vec<String>,
    },
    /// It is not running.
    #[error("background process {id} is not running: it {state}")]
    NotRunning {
        /// The id.
        id: String,
        /// How it ended.
        state: String,
    },
    /// It still runs, so it cannot be dismissed.
    #[error("background process {id} is still running; kill it first")]
    StillRunning {
        /// The id.
        id: String,
    },
    /// Its stdin could not be written.
    #[error("{0}")]
    Stdin(String),
    /// It could not be started.
    #[error("the background process did not start: {0}")]
    Spawn(String),
    /// The session ended.
    #[error("the session has ended; no background process starts or waits any more")]
    Closed,
}

/// The kept ids in words.
fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "none is kept (list them with the process tool)".to_owned()
    } else {
        format!("kept: {}", known.join(", "))
    }
}
