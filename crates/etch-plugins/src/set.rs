//! The configured plugins of a session, started together in the
//! background (E-PLUG-01, E-PLUG-16): a plugin's tools join the registry
//! once it has answered `initialize` and every plugin before it in the
//! configuration has settled, so which of two clashing names wins never
//! depends on start-up speed. A tool with a bad name or schema, or a name
//! a built-in or an earlier plugin already has, is rejected (E-PLUG-10);
//! a plugin that cannot start, or stops, leaves a diagnostic and the
//! session goes on without it.
//!
//! The bridges of MCP servers (named [`MCP_PREFIX`]`<server>`) are
//! slots like any other, except that their tool names are namespaced
//! (`mcp__<server>__…`, a prefix no plugin may use), so nothing they
//! offer can clash with a later plugin: they publish as soon as they are
//! ready and never hold back the plugins after them.

use std::collections::HashSet;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etch_config::PluginEntry;
use etch_model::ToolSpec;
use etch_protocol::plugin::PluginTool as WireTool;
use etch_tool::{Tool, ToolSource, check_tool};
use serde_json::Value;
use tokio::sync::watch;

use crate::client::Client;
use crate::env::plugin_env;
use crate::error::MCP_PREFIX;
use crate::error::PluginError;
use crate::tool::PluginTool;

/// How long a plugin gets to exit after its stdin closes, and again
/// after SIGTERM, when etch shuts it down.
const STOP_GRACE: Duration = Duration::from_millis(200);

/// Where one configured plugin stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// `disabled = true`: never started.
    Disabled,
    /// Starting or initializing.
    Starting,
    /// Running, with the tools it offers and those etch rejected (with
    /// why).
    Ready {
        /// Tools offered to the model.
        tools: Vec<String>,
        /// Tools refused, each with the reason.
        rejected: Vec<String>,
    },
    /// Could not start, or stopped; why.
    Failed(String),
}

/// One configured plugin.
struct Slot {
    /// Its name.
    name: String,
    /// Where it stands.
    status: Status,
    /// The process, once started.
    client: Option<Arc<Client>>,
    /// Its tools that passed their own checks, in its order.
    tools: Vec<Arc<PluginTool>>,
    /// Whether it bridges an MCP server.
    mcp: bool,
}

/// The state shared with the start-up tasks.
struct Inner {
    /// The plugins in configuration order.
    slots: Mutex<Vec<Slot>>,
    /// The tools offered now.
    published: Mutex<Vec<Arc<dyn Tool>>>,
    /// Names no plugin may take (the built-in tools).
    taken: Vec<String>,
    /// Diagnostics not yet collected.
    diagnostics: Mutex<Vec<(String, String)>>,
    /// Clashes already reported, so each is said once.
    reported: Mutex<HashSet<(String, String)>>,
    /// Plugins and MCP bridges still starting (a run's first request
    /// waits for them).
    starting: watch::Sender<usize>,
    /// Set by `shutdown`: a plugin that finishes starting afterwards is
    /// stopped at once.
    shutting_down: AtomicBool,
}

/// Settles a start-up slot when its task ends without doing so.
struct Settling {
    /// The set.
    inner: Arc<Inner>,
    /// The slot.
    index: usize,
    /// Whether the task settled it.
    done: bool,
}

impl Drop for Settling {
    fn drop(&mut self) {
        if !self.done {
            self.inner.settle(
                self.index,
                Err("its start-up was interrupted (etch stopped waiting for it)".to_owned()),
            );
        }
    }
}

/// The plugins of a session.
pub struct PluginSet {
    /// Shared with the start-up tasks.
    inner: Arc<Inner>,
}

impl PluginSet {
    /// Starts every enabled entry of `plugins` and of `bridges` (the MCP
    /// bridges, each named [`MCP_PREFIX`]`<server>`) from `cwd`,
    /// concurrently and in the background (on the current tokio
    /// runtime); `taken` are the built-in tool names. A plugin whose name
    /// starts with [`MCP_PREFIX`] is refused: the prefix is how messages
    /// tell an MCP server from a plugin.
    pub fn start(
        plugins: &[PluginEntry],
        bridges: &[PluginEntry],
        cwd: &Path,
        taken: Vec<String>,
    ) -> Self {
        let entries: Vec<(&PluginEntry, bool)> = plugins
            .iter()
            .map(|e| (e, false))
            .chain(bridges.iter().map(|e| (e, true)))
            .collect();
        let slots = entries
            .iter()
            .map(|(e, mcp)| Slot {
                name: e.name.clone(),
                status: if e.disabled {
                    Status::Disabled
                } else {
                    Status::Starting
                },
                client: None,
                tools: Vec::new(),
                mcp: *mcp,
            })
            .collect::<Vec<_>>();
        let starting = slots
            .iter()
            .filter(|s| s.status == Status::Starting)
            .count();
        let inner = Arc::new(Inner {
            slots: Mutex::new(slots),
            published: Mutex::new(Vec::new()),
            taken,
            diagnostics: Mutex::new(Vec::new()),
            reported: Mutex::new(HashSet::new()),
            starting: watch::Sender::new(starting),
            shutting_down: AtomicBool::new(false),
        });
        let runtime = tokio::runtime::Handle::try_current();
        for (index, (entry, mcp)) in entries.iter().enumerate().filter(|(_, (e, _))| !e.disabled) {
            if let Some((earlier, _)) = entries[..index]
                .iter()
                .find(|(e, m)| e.name == entry.name && m == mcp && !e.disabled)
            {
                let what = if *mcp {
                    "[[mcp.servers]]"
                } else {
                    "[[plugins]]"
                };
                inner.settle(
                    index,
                    Err(format!(
                        "another {what} entry (in {}) has the same name; rename one of them",
                        earlier.source.display()
                    )),
                );
                continue;
            }
            if !mcp && entry.name.starts_with(MCP_PREFIX) {
                inner.settle(
                    index,
                    Err(format!("plugin names starting with {MCP_PREFIX:?} are reserved for MCP servers ([[mcp.servers]]); rename it")),
                );
                continue;
            }
            let inner = Arc::clone(&inner);
            let entry = (*entry).clone();
            let cwd = cwd.to_path_buf();
            match &runtime {
                Ok(handle) => {
                    handle.spawn(async move {
                        // Settles the slot even if this task is dropped or
                        // panics, so no one waits for it forever.
                        let mut guard = Settling {
                            inner: Arc::clone(&inner),
                            index,
                            done: false,
                        };
                        let started = start_one(&entry, &cwd, &inner).await;
                        guard.done = true;
                        inner.settle(index, started);
                    });
                }
                Err(_) => inner.settle(
                    index,
                    Err("etch had no async runtime to start it in (a bug in etch)".to_owned()),
                ),
            }
        }
        Self { inner }
    }

    /// No plugins.
    pub fn empty() -> Self {
        Self::start(&[], &[], Path::new("."), Vec::new())
    }

    /// Every configured plugin with where it stands, in configuration
    /// order.
    pub fn statuses(&self) -> Vec<(String, Status)> {
        self.inner
            .slots
            .lock()
            .map(|slots| {
                slots
                    .iter()
                    .map(|s| {
                        let status = match (&s.status, &s.client) {
                            (Status::Ready { .. }, Some(client)) if !client.alive() => {
                                Status::Failed(client.stopped_why().unwrap_or_default())
                            }
                            (status, _) => status.clone(),
                        };
                        (s.name.clone(), status)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stops every plugin (E-PLUG-04), all at once; one still starting
    /// is killed as soon as it has started.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let clients: Vec<Arc<Client>> = self
            .inner
            .slots
            .lock()
            .map(|slots| slots.iter().filter_map(|s| s.client.clone()).collect())
            .unwrap_or_default();
        let mut stops = tokio::task::JoinSet::new();
        for client in clients {
            stops.spawn(async move { client.stop(STOP_GRACE).await });
        }
        while stops.join_next().await.is_some() {}
    }
}

/// Starts one plugin: its process, `initialize`, and its tools checked
/// one by one.
async fn start_one(
    entry: &PluginEntry,
    cwd: &Path,
    inner: &Inner,
) -> Result<(Arc<Client>, Vec<Value>), String> {
    let (mut env, refused) = plugin_env(std::env::vars_os(), &entry.env);
    env.extend(entry.set_env.iter().map(|(k, v)| (k.into(), v.into())));
    for name in refused {
        inner.diagnose(
            &entry.name,
            format!("{name} is a model credential; plugins and MCP servers never get credentials, so it was left out"),
        );
    }
    let timeout = Duration::from_secs(entry.timeout_seconds.max(1));
    // The notice already names the plugin: keep only what happened.
    Client::start(&entry.name, &entry.command, cwd, &env, timeout)
        .await
        .map_err(|e| match e {
            PluginError::Fatal { why, .. } => why,
            PluginError::Spawn { why, .. } => format!("could not be started: {why}"),
            other => other.to_string(),
        })
}

impl Inner {
    /// Whether a slot still starting could offer tool `name`.
    fn could_still_offer(&self, name: &str) -> bool {
        let Ok(slots) = self.slots.lock() else {
            return false;
        };
        slots
            .iter()
            .filter(|s| s.status == Status::Starting)
            .any(|s| match s.name.strip_prefix(MCP_PREFIX) {
                Some(server) if s.mcp => name.starts_with(&format!("mcp__{server}__")),
                _ => !name.starts_with("mcp__"),
            })
    }

    /// Records a diagnostic for `plugin`.
    fn diagnose(&self, plugin: &str, message: String) {
        if let Ok(mut list) = self.diagnostics.lock() {
            list.push((plugin.to_owned(), message));
        }
    }

    /// Records how plugin `index` started and republishes the tools.
    fn settle(&self, index: usize, started: Result<(Arc<Client>, Vec<Value>), String>) {
        if self.shutting_down.load(Ordering::SeqCst)
            && let Ok((client, _)) = &started
        {
            client.abandon();
        }
        let (name, mcp) = self
            .slots
            .lock()
            .ok()
            .and_then(|s| s.get(index).map(|s| (s.name.clone(), s.mcp)))
            .unwrap_or_default();
        let (status, client, tools) = match started {
            Err(why) => {
                let check = match name.strip_prefix(MCP_PREFIX) {
                    Some(server) if mcp => format!("etch mcp check {server}"),
                    _ => "etch plugins check".to_owned(),
                };
                self.diagnose(
                    &name,
                    format!("{why}; the session goes on without its tools (check it with {check})"),
                );
                (Status::Failed(why), None, Vec::new())
            }
            Ok((client, declared)) => {
                let (tools, rejected) = checked_tools(&client, declared, mcp);
                for why in &rejected {
                    self.diagnose(&name, format!("tool rejected: {why}"));
                }
                let names = tools.iter().map(|t| t.spec().name.clone()).collect();
                (
                    Status::Ready {
                        tools: names,
                        rejected,
                    },
                    Some(client),
                    tools,
                )
            }
        };
        if let Ok(mut slots) = self.slots.lock()
            && let Some(slot) = slots.get_mut(index)
        {
            slot.status = status;
            slot.client = client;
            slot.tools = tools;
        }
        self.publish();
        self.starting.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Recomputes the offered tools: plugins in configuration order up to
    /// the first one still starting, and every ready MCP bridge; names
    /// clashing with a built-in or an earlier plugin left out (and
    /// reported once).
    fn publish(&self) {
        let Ok(mut slots) = self.slots.lock() else {
            return;
        };
        let mut names: HashSet<String> = self.taken.iter().cloned().collect();
        let mut offered: Vec<Arc<dyn Tool>> = Vec::new();
        let mut held = false;
        for slot in slots.iter_mut() {
            if slot.status == Status::Starting {
                held |= !slot.mcp;
                continue;
            }
            if held && !slot.mcp {
                continue;
            }
            let mut clashed = Vec::new();
            for tool in &slot.tools {
                let name = &tool.spec().name;
                if names.insert(name.clone()) {
                    offered.push(Arc::clone(tool) as Arc<dyn Tool>);
                } else {
                    clashed.push(name.clone());
                }
            }
            for name in clashed {
                let first = self
                    .reported
                    .lock()
                    .is_ok_and(|mut r| r.insert((slot.name.clone(), name.clone())));
                if first {
                    let why = format!(
                        "{name}: a built-in tool or an earlier plugin or MCP server already has this name"
                    );
                    self.diagnose(&slot.name, format!("tool rejected: {why}"));
                    if let Status::Ready { tools, rejected } = &mut slot.status {
                        tools.retain(|t| *t != name);
                        rejected.push(why);
                    }
                }
            }
        }
        if let Ok(mut published) = self.published.lock() {
            *published = offered;
        }
    }
}

/// The tools a plugin declared that pass their own checks (E-PLUG-10),
/// and why the others were rejected; only an MCP bridge (`mcp`) may
/// offer `mcp__` names.
fn checked_tools(
    client: &Arc<Client>,
    declared: Vec<Value>,
    mcp: bool,
) -> (Vec<Arc<PluginTool>>, Vec<String>) {
    let mut tools = Vec::new();
    let mut rejected = Vec::new();
    let mut seen = HashSet::new();
    for (index, value) in declared.into_iter().enumerate() {
        let label = value
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("tool #{}", index + 1), str::to_owned);
        let tool = match serde_json::from_value::<WireTool>(value) {
            Ok(tool) => tool,
            Err(err) => {
                rejected.push(format!("{label}: {err}"));
                continue;
            }
        };
        if let Err(err) = check_tool(&tool.name, &tool.parameters) {
            rejected.push(err.to_string());
            continue;
        }
        if !mcp && tool.name.starts_with("mcp__") {
            rejected.push(format!(
                "{}: names starting with mcp__ are reserved for MCP servers",
                tool.name
            ));
            continue;
        }
        if !seen.insert(tool.name.clone()) {
            rejected.push(format!("{}: declared twice", tool.name));
            continue;
        }
        let spec = ToolSpec {
            name: tool.name,
            description: tool.description,
            parameters: tool.parameters,
        };
        tools.push(Arc::new(PluginTool::new(
            spec,
            tool.parallel_safety,
            Arc::clone(client),
        )));
    }
    (tools, rejected)
}

impl ToolSource for PluginSet {
    fn ready(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .published
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default()
    }

    fn pending(&self) -> bool {
        *self.inner.starting.borrow() > 0
    }

    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let mut starting = self.inner.starting.subscribe();
        Box::pin(async move {
            let _ = starting.wait_for(|n| *n == 0).await;
        })
    }

    /// Tools named `mcp__<server>__…` can only come from that server's
    /// bridge; any other name only from a plugin. Waits for those.
    fn settle_for(&self, name: &str) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let name = name.to_owned();
        let mut starting = self.inner.starting.subscribe();
        Box::pin(async move {
            let _ = starting
                .wait_for(|_| !self.inner.could_still_offer(&name))
                .await;
        })
    }

    /// Every plugin and MCP bridge still starting: a model is meant to see
    /// their tools from the first request (a one-shot `-p` has no other),
    /// and the loop bounds the wait. With none configured this is ready
    /// at once, so a run without plugins never waits.
    fn awaited(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let mut starting = self.inner.starting.subscribe();
        Box::pin(async move {
            let _ = starting.wait_for(|n| *n == 0).await;
        })
    }

    fn diagnostics(&self) -> Vec<(String, String)> {
        let mut out = self
            .inner
            .diagnostics
            .lock()
            .map(|mut d| std::mem::take(&mut *d))
            .unwrap_or_default();
        // A plugin that died mid-session says so once.
        if let Ok(slots) = self.inner.slots.lock() {
            for slot in slots.iter() {
                if let (Status::Ready { .. }, Some(client)) = (&slot.status, &slot.client)
                    && let Some(why) = client.stopped_why()
                    && why != "etch shut it down"
                {
                    let first = self
                        .inner
                        .reported
                        .lock()
                        .is_ok_and(|mut r| r.insert((slot.name.clone(), String::new())));
                    if first {
                        out.push((
                            slot.name.clone(),
                            format!("stopped: {why}; its tools are no longer offered"),
                        ));
                    }
                }
            }
        }
        out
    }
}
