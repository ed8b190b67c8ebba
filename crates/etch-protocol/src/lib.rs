//! etch's protocol: the commands a front end sends to a session, the
//! responses and events that come back, and the wire shape of a message.
//!
//! Every front end (`etch rpc`, the terminal chat, later the editor and
//! HTTP servers) and every client (the plugin SDK, scripts, tests) speaks
//! these types, so this crate holds serde types and pure functions only:
//! no tokio, no I/O, no runtime. It must not know how a session runs, which
//! providers exist or how anything is drawn. The shapes follow Pi's RPC
//! mode (commands tagged by `type`, camelCase fields, responses echoing the
//! command `id`), with one deliberate difference: every event caused by a
//! command carries that command's `id`. `session` holds what a front end learns about stored
//! sessions (lists, replays, trees) without reading their files. `plugin` holds the other wire
//! protocol etch speaks: JSONL-RPC with out-of-process plugins.

pub mod command;
pub mod event;
pub mod framing;
pub mod message;
pub mod plugin;
pub mod response;
pub mod session;

pub use command::{
    ApprovalDecision, Command, CommandBody, ImageInput, QueueMode, StreamingBehavior, ThinkingLevel,
};
pub use event::{CompactionOutcome, Delta, Event, EventBody, NoticeLevel};
pub use framing::{Record, Records, read_record, split_records};
pub use message::{StopReason, WireMessage, WirePart};
pub use response::Response;
pub use session::{
    ForkPoint, Replay, ReplayCall, ReplayEntry, ReplayImage, SessionSummary, Totals, TreeRow,
    UsageRecord,
};
