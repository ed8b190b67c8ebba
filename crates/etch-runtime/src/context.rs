//! What a run offers the model besides its history: the active tools and
//! the pinned prompt assembled for them (G22: pinned layers, instruction
//! files, the skill catalog), and the compaction policy that follows from
//! them.
//!
//! Diagnostics (an unreadable instruction file, a broken skill) come back
//! as values: a bad file never stops a run, and the front end decides how
//! to show them. This module must not know who asked or how anything is
//! shown.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use etch_config::Config;
use etch_core::{CompactionPolicy, Redactor};
use etch_plugins::PluginSet;
use etch_prompt::{Assembled, PromptInputs};
use etch_tool::ToolSource;
use etch_tool::{Approver, Profile, ToolRegistry};
use etch_tools::builtin::{self, BuiltinOptions};

use crate::approval::{Broker, PolicyApprover, Rules};
use crate::error::OpenError;
use crate::sandbox::Sandbox;
use crate::settings::{Place, RunSettings};

/// The active tools and the pinned prompt built for them, and the hooks
/// that may run around them.
#[derive(Clone)]
pub struct Context {
    /// Active tools.
    pub tools: ToolRegistry,
    /// The assembled pinned layers, files and skills.
    pub assembled: Assembled,
    /// The enabled hooks, past the trust gate.
    pub hooks: etch_hooks::Hooks,
    /// The configured plugins (their tools are a source in `tools`).
    pub plugins: Arc<PluginSet>,
    /// The subagents running now, by the parent's `task` call id.
    pub children: Arc<crate::subagent::Children>,
    /// The sandbox the place's commands run in (bash, `!cmd`, plugins
    /// that opt in), worked out once.
    pub sandbox: Arc<Sandbox>,
    /// The calls waiting for the approval of whoever watches their
    /// session (the chat, an RPC or HTTP client), when this context's
    /// tools ask them ([`Self::build`]).
    pub approvals: Arc<Broker>,
    /// The background processes of this context's sessions, by session.
    pub processes: Arc<etch_process::Processes>,
}

impl Context {
    /// Builds the tools `settings` ask for and the prompt for them in
    /// `place`; the assembly's diagnostics are in `assembled.diagnostics`.
    /// Project hooks the user has not trusted refuse the build.
    /// Plugins and MCP servers start here, in the background: a run's
    /// first request waits (briefly) only for MCP servers, and a call to
    /// a tool no one offers yet waits for whatever could offer it.
    ///
    /// Calls the `[approval]` policy asks about wait for the session's
    /// watcher in [`Self::approvals`] (an `approval_request` event, an
    /// `approve` command).
    pub fn build(place: &Place, settings: &RunSettings) -> Result<Self, OpenError> {
        let approvals = Arc::new(Broker::default());
        let approver: Arc<dyn Approver> = Arc::new(PolicyApprover::new(
            Rules::new(&place.config.approval),
            Arc::clone(&approvals) as Arc<dyn crate::approval::Asker>,
        ));
        Self::build_with(place, settings, Some(&approver), approvals)
    }

    /// [`Self::build`] with every tool `approver` gates asking it before
    /// each call (`-p` answers by its flags, `etch acp` asks the editor):
    /// built-ins, plugin and MCP tools, the `task` tool, and the tools
    /// subagents get from this context.
    pub fn build_gated(
        place: &Place,
        settings: &RunSettings,
        approver: Option<&Arc<dyn Approver>>,
    ) -> Result<Self, OpenError> {
        Self::build_with(place, settings, approver, Arc::default())
    }

    /// [`Self::build_gated`] with the broker the approver asks through,
    /// so that the `task` tool's children find it.
    fn build_with(
        place: &Place,
        settings: &RunSettings,
        approver: Option<&Arc<dyn Approver>>,
        approvals: Arc<Broker>,
    ) -> Result<Self, OpenError> {
        let hooks = crate::hooks::load(place)?;
        let sandbox = Arc::new(Sandbox::for_place(place));
        let processes = Arc::new(processes_for(place));
        let mut tools = active_tools(settings, place, &sandbox, Some(&processes))?;
        // Every built-in name is reserved, active or not: a plugin's `bash`
        // must not pass for the built-in under --read-only.
        let plugins = Arc::new(PluginSet::start(
            &sandbox.confine_plugins(&place.config.plugins),
            &crate::mcp::bridge_entries(&place.config.mcp_servers, &etch_exe()),
            &place.cwd,
            builtin::RESERVED.iter().map(|n| (*n).to_owned()).collect(),
        ));
        let source = Arc::clone(&plugins) as Arc<dyn ToolSource>;
        if settings.read_only {
            // Only what says it only reads (an MCP tool's readOnlyHint).
            tools.add_source(Arc::new(etch_tool::OnlyReading(source)));
        } else {
            tools.add_source(source);
        }
        if let Some(approver) = approver {
            tools = tools.gated(approver);
        }
        let assembled = assemble(place, &tools);
        Self {
            tools,
            assembled,
            hooks,
            plugins,
            children: Arc::default(),
            sandbox,
            approvals,
            processes,
        }
        .with_task(place, settings, approver)
    }

    /// Adds the `task` tool when subagents are on (E-SUB-01), lending
    /// it this context as the children's starting point.
    fn with_task(
        mut self,
        place: &Place,
        settings: &RunSettings,
        approver: Option<&Arc<dyn Approver>>,
    ) -> Result<Self, OpenError> {
        if let Some(task) = crate::subagent::TaskTool::new(place, settings, &self) {
            let mut task: Arc<dyn etch_tool::Tool> = Arc::new(task);
            if let Some(approver) = approver.filter(|a| a.gates(crate::subagent::TASK)) {
                task = Arc::new(etch_tool::Gated::new(task, Arc::clone(approver)));
            }
            self.tools
                .register(task)
                .map_err(|e| OpenError::Failed(e.to_string()))?;
            self.assembled = assemble(place, &self.tools);
        }
        Ok(self)
    }

    /// [`Self::build`] for looking, not running (`etch context`): no
    /// hooks, so no trust is needed.
    pub fn inspect(place: &Place, settings: &RunSettings) -> Result<Self, OpenError> {
        let sandbox = Arc::new(Sandbox::for_place(place));
        let processes = Arc::new(processes_for(place));
        let tools = active_tools(settings, place, &sandbox, Some(&processes))?;
        let assembled = assemble(place, &tools);
        Self {
            tools,
            assembled,
            hooks: etch_hooks::Hooks::default(),
            plugins: Arc::new(PluginSet::empty()),
            children: Arc::default(),
            sandbox,
            approvals: Arc::default(),
            processes,
        }
        .with_task(place, settings, None)
    }

    /// The compaction policy for runs with this context.
    pub fn compaction_policy(&self, config: &Config) -> CompactionPolicy {
        compaction_policy(config, &self.assembled, &self.tools)
    }

    /// Expands skill `name` into `prompt` (P-SKILL-10: the skill's
    /// instructions in a `<skill>` block, then the user's text).
    pub fn expand_skill(&self, name: &str, prompt: &str) -> Result<String, OpenError> {
        let skills = &self.assembled.skills;
        let Some(skill) = etch_prompt::find_skill(skills, name) else {
            let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            let listed = if known.is_empty() {
                "none found in .etch/skills, .agents/skills or ~/.etch/skills".to_owned()
            } else {
                known.join(", ")
            };
            return Err(OpenError::Usage(format!(
                "unknown skill \"{name}\"; available: {listed}"
            )));
        };
        let body =
            etch_prompt::load_skill_body(skill).map_err(|e| OpenError::Failed(e.to_string()))?;
        Ok(etch_prompt::expand_skill(skill, &body, prompt))
    }
}

/// The running etch executable, which serves as the MCP bridge; when
/// it cannot be found, plain `etch` from PATH.
pub fn etch_exe() -> std::path::PathBuf {
    std::env::current_exe().unwrap_or_else(|_| "etch".into())
}

/// The pinned prompt for `tools` in `place`, dated today (local time).
pub fn assemble(place: &Place, tools: &ToolRegistry) -> Assembled {
    let date = chrono::Local::now().format("%Y-%m-%d").to_string();
    etch_prompt::assemble(&PromptInputs {
        cwd: &place.cwd,
        home: place.home.as_deref(),
        tools: &tools.names(),
        prompt_text: place.config.prompt.text.as_deref(),
        date: &date,
        compact: tools.profile() == Profile::Compact,
    })
}

/// Compaction for a run (E-CTX-16: threshold compaction as configured;
/// C22: overflow recovery always). The pinned prompt and tool schemas are
/// counted when the log has no usage to measure the request by.
pub fn compaction_policy(
    config: &Config,
    assembled: &Assembled,
    tools: &ToolRegistry,
) -> CompactionPolicy {
    let auto = config.context.auto_compact;
    // Only the threshold check reads the pinned size; skip the work
    // otherwise, since every run starts here.
    let pinned_tokens = if auto {
        let schemas = serde_json::to_string(&tools.specs()).unwrap_or_default();
        etch_prompt::estimate::tokens(&assembled.prompt()) + etch_prompt::estimate::tokens(&schemas)
    } else {
        0
    };
    CompactionPolicy {
        auto,
        threshold_tokens: config.context.auto_compact_threshold_tokens,
        settings: compact_settings(config),
        pinned_tokens,
    }
}

/// What compaction keeps raw (`[context] keep_recent_tokens`, `[session]
/// keep_messages`), counted with etch's token estimator (E-CTX-21: about
/// four bytes per token).
pub fn compact_settings(config: &Config) -> etch_compact::Settings {
    etch_compact::Settings {
        keep_recent_tokens: config.context.keep_recent_tokens,
        keep_messages: usize::try_from(config.session.keep_messages).unwrap_or(usize::MAX),
        estimate: etch_prompt::estimate::tokens,
        force: false,
    }
}

/// The tool names to offer: `--tools`, else the read-only set for
/// `--read-only`, else `[tools] active`, else all seven built-ins (C1).
pub fn tool_names<'a>(settings: &'a RunSettings, config: &'a Config) -> Vec<&'a str> {
    let listed = |list: &'a [String]| -> Vec<&'a str> {
        list.iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .collect()
    };
    if settings.read_only && settings.tools.is_none() {
        return builtin::READ_ONLY.to_vec();
    }
    match settings.tools.as_ref().or(config.tools.active.as_ref()) {
        Some(list) => listed(list),
        None => builtin::ALL.to_vec(),
    }
}

/// The context estimate at or under which `[tools] profile = "auto"`
/// picks the compact profile: the compaction threshold is the only
/// figure etch has of the window the user budgets for, and a threshold
/// this low means a small model's window.
const SMALL_WINDOW_TOKENS: u64 = 16_000;

/// The tool profile in force (`[tools] profile`): `full` or `compact` as
/// configured; `auto` is compact for a model server on this machine or
/// the local network (where small models run, and where every prompt
/// token costs the user's own CPU time) or for a small context budget,
/// and full for everything else: hosted models forgive a long prompt
/// and use the detail.
pub fn tool_profile(settings: &RunSettings, config: &Config) -> Profile {
    match config.tools.profile.as_str() {
        "full" => Profile::Full,
        "compact" => Profile::Compact,
        _ if config.context.auto_compact_threshold_tokens <= SMALL_WINDOW_TOKENS
            || local_endpoint(settings, config) =>
        {
            Profile::Compact
        }
        _ => Profile::Full,
    }
}

/// The cap on a reply the loop requires to be a tool call, for a server
/// on this machine or network (`AgentConfig::required_reply_tokens`): a
/// call that looks at a file takes under a hundred tokens, prose before
/// it a few hundred; llama.cpp's forced call otherwise lets a small
/// model that meant to answer write blank lines until its context is
/// full.
pub(crate) const REQUIRED_REPLY_TOKENS: u32 = 512;

/// Whether the model server is on this machine or the local network:
/// the `--base-url` flag, else `[openai] base_url` for the openai
/// provider; the built-in echo model is no server.
pub(crate) fn local_endpoint(settings: &RunSettings, config: &Config) -> bool {
    let provider = settings
        .provider
        .provider
        .as_deref()
        .or(config.provider.name.as_deref());
    if provider == Some("echo") {
        return false;
    }
    let configured = match provider {
        None | Some("openai") => config.openai.base_url.as_deref(),
        Some(_) => None,
    };
    settings
        .provider
        .base_url
        .as_deref()
        .or(configured)
        .and_then(etch_provider::http::host_of)
        .is_some_and(|host| crate::provider::is_local_host(&host))
}

/// What the built-in tools take from the configuration and the
/// environment: whether `bash` keeps credentials (`[tools.bash]
/// inherit_credentials`, G18), how much of a stream its spill file keeps
/// (`max_spill_bytes`, E-CFG-25), the home whose `.etch` they never
/// expose or change (E-TOOL-22), and the sandbox `bash` runs commands in
/// (the place's).
pub fn builtin_options(
    place: &Place,
    sandbox: &Sandbox,
    processes: Option<&Arc<etch_process::Processes>>,
) -> BuiltinOptions {
    let config = &place.config;
    BuiltinOptions {
        inherit_credentials: config.tools.bash_inherit_credentials,
        max_spill_bytes: config.tools.bash_max_spill_bytes,
        home: home_dir(),
        sandbox: sandbox.for_tools(),
        processes: processes.cloned(),
        image_max_edge: config.tools.read_image_max_edge,
    }
}

/// The background processes of `place`'s sessions, under `[process]`.
fn processes_for(place: &Place) -> etch_process::Processes {
    let config = &place.config;
    etch_process::Processes::new(
        etch_exe(),
        etch_process::Limits {
            max_running: usize::try_from(config.process.max_running).unwrap_or(usize::MAX),
            max_spill: config.tools.bash_max_spill_bytes,
            ..etch_process::Limits::default()
        },
    )
}

/// `$HOME`, when set.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The secrets no tool result may carry (E-TOOL-22, E-AUTH-10), for the
/// loop to redact: the access, refresh and id tokens of the stored login
/// in `home` (read again for every tool batch, so a login refreshed during
/// the run is covered), the values of the credential variables
/// (`etch_auth::CREDENTIAL_ENV_VARS`) and the `--api-key` value. The loop
/// ignores values shorter than 8 characters.
pub fn redactor(home: Option<&Path>, api_key: Option<&str>) -> Redactor {
    let mut fixed: Vec<String> = etch_auth::CREDENTIAL_ENV_VARS
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .collect();
    fixed.extend(api_key.map(str::to_owned));
    let store = home.map(etch_auth::CredentialStore::in_home);
    Redactor::from_source(move || {
        let mut secrets = fixed.clone();
        if let Some(store) = &store {
            secrets.extend(stored_tokens(store));
        }
        secrets
    })
}

/// The token values in the store: the login's, or, when the file is there
/// but does not load as one (a wrong `type`, an old format), every
/// `*_token` string in its JSON, which `bash` could still print.
fn stored_tokens(store: &etch_auth::CredentialStore) -> Vec<String> {
    match store.load() {
        Ok(Some(login)) => {
            let mut tokens = vec![
                login.access_token.expose().to_owned(),
                login.refresh_token.expose().to_owned(),
            ];
            tokens.extend(login.id_token.map(|t| t.expose().to_owned()));
            tokens
        }
        Ok(None) => Vec::new(),
        Err(_) => std::fs::read(store.path())
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|value| value.as_object().cloned())
            .map(|fields| {
                fields
                    .into_iter()
                    .filter(|(key, _)| key.ends_with("_token"))
                    .filter_map(|(_, value)| value.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The registry of active built-in tools, shaped by [`builtin_options`]
/// and shown under [`tool_profile`]. An unknown name is a usage error
/// listing the known ones.
pub fn active_tools(
    settings: &RunSettings,
    place: &Place,
    sandbox: &Sandbox,
    processes: Option<&Arc<etch_process::Processes>>,
) -> Result<ToolRegistry, OpenError> {
    let config = &place.config;
    let options = builtin_options(place, sandbox, processes);
    let profile = tool_profile(settings, config);
    builtin::registry(&tool_names(settings, config), &options)
        .map(|registry| registry.with_profile(profile))
        .map_err(|e| {
            let from_config = settings.tools.is_none() && !settings.read_only;
            if from_config && config.tools.active.is_some() {
                OpenError::Usage(format!("[tools] active in the configuration: {e}"))
            } else {
                OpenError::Usage(e.to_string())
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` is compact for a server on this machine or the local
    /// network, or a small context budget, and full for a hosted one or
    /// the echo model; `full` and `compact` are taken as set.
    #[test]
    fn the_tool_profile_follows_the_endpoint() {
        let profile = |url: Option<&str>, provider: Option<&str>, set: &str, threshold: u64| {
            let mut config = Config::default();
            config.tools.profile = set.to_owned();
            config.context.auto_compact_threshold_tokens = threshold;
            let settings = RunSettings {
                provider: crate::ProviderFlags {
                    base_url: url.map(str::to_owned),
                    provider: provider.map(str::to_owned),
                    ..crate::ProviderFlags::default()
                },
                ..RunSettings::default()
            };
            tool_profile(&settings, &config)
        };
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:8080/v1",
            "http://10.0.0.5/v1",
            "http://gpu-box.local:8080/v1",
            "http://[fd00::5]:8080/v1",
        ] {
            assert_eq!(
                profile(Some(url), None, "auto", 120_000),
                Profile::Compact,
                "{url}"
            );
        }
        for url in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://8.8.8.8/v1",
        ] {
            assert_eq!(
                profile(Some(url), None, "auto", 120_000),
                Profile::Full,
                "{url}"
            );
        }
        assert_eq!(profile(None, None, "auto", 120_000), Profile::Full);
        assert_eq!(profile(None, None, "auto", 16_000), Profile::Compact);
        assert_eq!(
            profile(Some("http://127.0.0.1/v1"), Some("echo"), "auto", 120_000),
            Profile::Full
        );
        assert_eq!(
            profile(Some("http://127.0.0.1/v1"), None, "full", 120_000),
            Profile::Full
        );
        assert_eq!(profile(None, None, "compact", 120_000), Profile::Compact);
    }

    /// The stored login's three tokens and the `--api-key` value are
    /// redacted, the store read again for each snapshot (a refreshed login
    /// is covered); a file that does not load as a login still has its
    /// `*_token` strings redacted.
    #[test]
    fn redactor_covers_the_stored_login() {
        let home = tempfile::tempdir().unwrap();
        let redactor = redactor(Some(home.path()), Some("sk-flag-key-123456"));
        let text = "at-first-0000000 rt-first-0000000 it-first-0000000 sk-flag-key-123456";
        assert_eq!(
            redactor.secrets().redact(text),
            text.replace("sk-flag-key-123456", etch_core::REDACTED)
        );
        let store = home.path().join(".etch/auth");
        std::fs::create_dir_all(&store).unwrap();
        let login = |access: &str, kind: &str| {
            serde_json::json!({
                "type": kind,
                "access_token": access,
                "refresh_token": "rt-first-0000000",
                "id_token": "it-first-0000000",
                "expires_at": "2099-01-01T00:00:00Z",
            })
            .to_string()
        };
        std::fs::write(
            store.join("openai.json"),
            login("at-first-0000000", "openai-codex-oauth"),
        )
        .unwrap();
        let all = "[redacted: etch credential] ".repeat(4);
        assert_eq!(redactor.secrets().redact(text), all.trim_end());
        std::fs::write(
            store.join("openai.json"),
            login("at-second-000000", "openai-codex-oauth"),
        )
        .unwrap();
        assert_eq!(
            redactor
                .secrets()
                .redact("at-second-000000 at-first-0000000"),
            "[redacted: etch credential] at-first-0000000"
        );
        std::fs::write(
            store.join("openai.json"),
            login("at-third-0000000", "other"),
        )
        .unwrap();
        assert_eq!(
            redactor.secrets().redact("at-third-0000000"),
            "[redacted: etch credential]"
        );
    }
}
