//! etch's external hooks (E-HOOK in docs/requirements.md): the eleven
//! lifecycle events, anchored matchers, the JSON envelope a hook reads on
//! stdin, running the hook command (`sh -c`, its own process group, no
//! credentials in its environment, a timeout that kills the group,
//! bounded output) and reading what it answers (a JSON object of the
//! fields its event accepts, exit code 2 as a block where that blocks).
//!
//! Where hooks run (prompt admission, the request build, around tools and
//! compaction) and what their answers change is the runtime's business;
//! this crate must not know the session log or the loop.

pub mod claude;
pub mod error;
pub mod event;
pub mod hooks;
pub mod matcher;
pub mod outcome;
pub mod process;

pub use claude::Protocol;
pub use error::HookError;
pub use event::HookEvent;
pub use hooks::{Hook, Hooks, Ran, envelope, run};
pub use matcher::Matcher;
pub use outcome::Outcome;
