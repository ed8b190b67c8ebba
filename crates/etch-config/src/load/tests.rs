//! Tests of loading real files: precedence, provenance, appending entries,
//! broken files, `--effective` and path resolution.

use super::*;
use crate::config::{HookEntry, McpServerEntry, SubagentProfile};

/// A temporary home with a user file and a project with its own file.
struct Fixture {
    /// Keeps the directory alive for the test.
    _temp: tempfile::TempDir,
    /// The home directory.
    home: PathBuf,
    /// The project root (holds `.etch/`).
    project: PathBuf,
    /// A directory nested inside the project, used as the cwd.
    nested: PathBuf,
}

impl Fixture {
    /// Writes `user` and `project` config texts (`None` leaves a file out).
    fn new(user: Option<&str>, project: Option<&str>) -> Self {
        let temp = tempfile::tempdir().expect("tempdir");
        let home = temp.path().join("home");
        let project_dir = temp.path().join("work/app");
        let nested = project_dir.join("src/deep");
        fs::create_dir_all(home.join(".etch")).expect("mkdir");
        fs::create_dir_all(project_dir.join(".etch")).expect("mkdir");
        fs::create_dir_all(&nested).expect("mkdir");
        if let Some(text) = user {
            fs::write(home.join(".etch/config.toml"), text).expect("write user");
        }
        if let Some(text) = project {
            fs::write(project_dir.join(".etch/config.toml"), text).expect("write project");
        }
        Self {
            _temp: temp,
            home,
            project: project_dir,
            nested,
        }
    }

    /// Loads from the nested cwd.
    fn load(&self) -> Loaded {
        load(&self.nested, Some(&self.home))
    }

    /// The user file's path.
    fn user_file(&self) -> PathBuf {
        self.home.join(".etch/config.toml")
    }

    /// The project file's path.
    fn project_file(&self) -> PathBuf {
        self.project.join(".etch/config.toml")
    }
}

/// Defaults < user < project, with provenance for each value.
#[test]
fn merge_order_and_provenance() {
    let fixture = Fixture::new(
        Some(
            "[openai]\napi = \"responses\"\ntransport = \"auto\"\n[session]\nmax_tool_rounds = 10\n",
        ),
        Some("[session]\nmax_tool_rounds = 20\n"),
    );
    let loaded = fixture.load();
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    assert_eq!(loaded.files.user, Some(fixture.user_file()));
    assert_eq!(loaded.files.project, Some(fixture.project_file()));
    assert_eq!(loaded.project_root, Some(fixture.project.clone()));

    assert_eq!(loaded.config.session.max_tool_rounds, 20);
    assert_eq!(
        loaded.source("session.max_tool_rounds"),
        Source::File(fixture.project_file())
    );
    assert_eq!(loaded.config.openai.api, "responses");
    assert_eq!(
        loaded.source("openai.api"),
        Source::File(fixture.user_file())
    );
    assert_eq!(loaded.config.openai.reasoning_effort, "minimal");
    assert_eq!(loaded.source("openai.reasoning_effort"), Source::Default);
    assert_eq!(loaded.source("no.such_key"), Source::Default);
}

/// With no files at all, the compiled defaults apply and nothing is wrong.
#[test]
fn no_files_means_defaults() {
    let fixture = Fixture::new(None, None);
    let loaded = fixture.load();
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.diagnostics.is_empty());
    assert_eq!(loaded.files, ConfigFiles::default());
    assert_eq!(loaded.project_root, None);
}

/// Array tables append in source order, user entries first.
#[test]
fn array_tables_append_user_first() {
    let fixture = Fixture::new(
        Some(
            "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"user-1\"\n\
             [[plugins]]\nname = \"u\"\ncommand = \"u\"\n\
             [[hooks.SessionStart]]\ncommand = \"user-2\"\n",
        ),
        Some(
            "[[hooks.PreToolUse]]\ncommand = \"project-1\"\ntimeout_seconds = 5\n\
             [[plugins]]\nname = \"p\"\ncommand = \"p\"\ndisabled = true\n\
             [[subagents.profile]]\nname = \"explore\"\n",
        ),
    );
    let loaded = fixture.load();
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    let hooks: Vec<_> = loaded
        .config
        .hooks
        .iter()
        .map(|hook| (hook.event.as_str(), hook.command.as_str()))
        .collect();
    assert_eq!(
        hooks,
        [
            ("PreToolUse", "user-1"),
            ("SessionStart", "user-2"),
            ("PreToolUse", "project-1")
        ]
    );
    assert_eq!(
        loaded.config.hooks[2],
        HookEntry {
            event: "PreToolUse".into(),
            matcher: String::new(),
            command: "project-1".into(),
            timeout_seconds: 5,
            disabled: false,
            protocol: "etch".into(),
            source: fixture.project_file(),
        }
    );
    assert_eq!(loaded.config.hooks[0].timeout_seconds, 30);
    assert_eq!(loaded.config.hooks[0].source, fixture.user_file());
    let plugins: Vec<_> = loaded
        .config
        .plugins
        .iter()
        .map(|plugin| (plugin.name.as_str(), plugin.disabled))
        .collect();
    assert_eq!(plugins, [("u", false), ("p", true)]);
    assert_eq!(loaded.config.subagents.profiles[0].name, "explore");
    assert_eq!(loaded.config.subagents.profiles[0].model, None);
}

/// A broken project file is reported and ignored; the user file still counts.
#[test]
fn broken_file_contributes_nothing() {
    let fixture = Fixture::new(
        Some("[session]\nmax_tool_rounds = 10\n"),
        Some("[session]\nmax_tool_rounds = 20\n[openai\napi = \"responses\"\n"),
    );
    let loaded = fixture.load();
    assert!(loaded.has_errors());
    assert_eq!(loaded.diagnostics.len(), 1);
    let text = loaded.diagnostics[0].to_string();
    assert!(
        text.starts_with(&format!(
            "{}:3: invalid TOML",
            fixture.project_file().display()
        )),
        "{text}"
    );
    assert_eq!(loaded.config.session.max_tool_rounds, 10);
    assert_eq!(loaded.config.openai.api, "chat");
}

/// An unreadable file is an error without a line; loading goes on.
#[test]
fn unreadable_file_is_an_error() {
    let temp = tempfile::tempdir().expect("tempdir");
    let files = ConfigFiles {
        user: Some(temp.path().to_path_buf()),
        project: None,
    };
    let loaded = load_files(files, temp.path());
    assert!(loaded.has_errors());
    assert_eq!(loaded.diagnostics[0].line, None);
    assert!(
        loaded.diagnostics[0]
            .message
            .starts_with("cannot read the config file: ")
    );
    assert_eq!(loaded.config, Config::default());
}

/// Unknown keys warn at runtime and are errors for `config check`.
#[test]
fn strict_turns_warnings_into_errors() {
    let fixture = Fixture::new(None, Some("[session]\ndirr = \"x\"\n"));
    let loaded = fixture.load();
    assert!(!loaded.has_errors());
    assert_eq!(loaded.diagnostics[0].severity, Severity::Warning);
    let strict = loaded.strict();
    assert!(strict.has_errors());
    assert_eq!(strict.diagnostics[0].severity, Severity::Error);
}

/// `--effective` parses back, shows every key with its provenance, and
/// reflects caller overrides marked as flags.
#[test]
fn effective_toml_round_trips_with_provenance() {
    let fixture = Fixture::new(
        Some(
            "[openai]\napi = \"responses\"\n[serve]\ntoken_file = \"/run/etch-token\"\n[sandbox]\nmode = \"read-only\"\nwritable_roots = [\"/srv\"]\ndeny_read = [\"~/.ssh\"]\n[approval]\nask = [\"write\"]\n[[plugins]]\nname = \"git\"\ncommand = \"git-plugin\"\n",
        ),
        Some(
            "[session]\nmax_tool_rounds = 20\ngrounding = true\n[tools]\nactive = [\"read\", \"bash\"]\n[acp]\nask = [\"bash\"]\n[prompt]\ntext = \"Be \\\"brief\\\".\\nReally.\"\n[[hooks.PreToolUse]]\nmatcher = \"^bash$\"\ncommand = \"audit\"\n",
        ),
    );
    let mut loaded = fixture.load();
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    loaded.config.openai.transport = "websocket".into();
    loaded.mark_flag("openai.transport");
    let text = loaded.effective_toml();

    let parsed: toml::Table =
        toml::from_str(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    assert_eq!(parsed["session"]["max_tool_rounds"].as_integer(), Some(20));
    assert_eq!(parsed["session"]["dir"].as_str(), Some(".etch/sessions"));
    assert_eq!(parsed["openai"]["transport"].as_str(), Some("websocket"));
    assert_eq!(parsed["provider"]["name"].as_str(), Some("echo"));
    assert_eq!(parsed["provider"]["model"].as_str(), Some("gpt-5.5"));
    assert_eq!(
        parsed["prompt"]["text"].as_str(),
        Some("Be \"brief\".\nReally.")
    );
    assert_eq!(
        parsed["tools"]["bash"]["inherit_credentials"].as_bool(),
        Some(false)
    );
    assert_eq!(parsed["plugins"][0]["name"].as_str(), Some("git"));
    assert_eq!(
        parsed["hooks"]["PreToolUse"][0]["matcher"].as_str(),
        Some("^bash$")
    );
    let root = toml::Value::Table(parsed.clone());
    for key in crate::schema_keys() {
        if [
            "hooks.",
            "plugins.",
            "subagents.profile.",
            "mcp.servers.",
            "prices.",
        ]
        .iter()
        .any(|array| key.starts_with(array))
        {
            continue;
        }
        let found = key
            .split('.')
            .try_fold(&root, |value, segment| value.get(segment));
        assert!(found.is_some(), "{key} missing from --effective:\n{text}");
    }

    let user = fixture.user_file().display().to_string();
    let project = fixture.project_file().display().to_string();
    assert!(
        text.contains("max_tool_rounds = 20  # from ") && text.contains(&project),
        "{text}"
    );
    assert!(
        text.contains(&format!("api = \"responses\"  # from {user}")),
        "{text}"
    );
    assert!(text.contains("keep_messages = 12  # default\n"), "{text}");
    assert!(
        text.contains("transport = \"websocket\"  # from a flag\n"),
        "{text}"
    );
    assert!(
        text.contains("name = \"echo\"  # default: auto-selected"),
        "{text}"
    );
    assert!(
        text.contains(&format!("[[plugins]]  # from {user}\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("[[hooks.PreToolUse]]  # from {project}\n")),
        "{text}"
    );
    assert!(
        text.contains("[subagents]\n") && !text.contains("milestone"),
        "{text}"
    );
}

/// Keys without a default and unset are shown as comments, not values.
#[test]
fn effective_toml_marks_unset_keys() {
    let fixture = Fixture::new(None, None);
    let text = fixture.load().effective_toml();
    assert!(text.contains("# text is not set"), "{text}");
    assert!(text.contains("# project file: (none)"), "{text}");
    let parsed: toml::Table = toml::from_str(&text).expect("parses");
    assert!(parsed["prompt"].get("text").is_none());
}

/// Relative paths resolve against the project root, else the cwd.
#[test]
fn resolve_path_uses_project_root() {
    let fixture = Fixture::new(None, Some("[session]\ndir = \"sessions\"\n"));
    let loaded = fixture.load();
    assert_eq!(
        loaded.resolve_path(&fixture.nested, &loaded.config.session.dir),
        fixture.project.join("sessions")
    );
    assert_eq!(
        loaded.resolve_path(&fixture.nested, "/abs/dir"),
        PathBuf::from("/abs/dir")
    );

    let fixture = Fixture::new(Some("[session]\ndir = \"s\"\n"), None);
    let loaded = fixture.load();
    assert_eq!(loaded.project_root, None);
    assert_eq!(
        loaded.resolve_path(&fixture.nested, "s"),
        fixture.nested.join("s")
    );
}

/// `[[mcp.servers]]` entries build with their defaults, user entries first,
/// and `--effective` shows them so they load back unchanged.
#[test]
fn mcp_servers_build_and_show() {
    let fixture = Fixture::new(
        Some("[[mcp.servers]]\nname = \"docs\"\nurl = \"https://mcp.example.com/mcp\"\n"),
        Some(
            "[[mcp.servers]]\nname = \"git\"\ncommand = \"mcp-server-git\"\n\
             args = [\"--repository\", \".\"]\nenv = [\"GIT_CONFIG_GLOBAL\"]\n\
             enabled_tools = [\"git_status\"]\n\
             [[mcp.servers]]\nname = \"remote\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
             headers = [\"X-Team: ${TEAM}\"]\nbearer_token_env = \"REMOTE_TOKEN\"\n\
             timeout_seconds = 5\ndisabled = true\ndisabled_tools = [\"drop\"]\n",
        ),
    );
    let loaded = fixture.load();
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    let servers = &loaded.config.mcp_servers;
    assert_eq!(
        servers[0],
        McpServerEntry {
            name: "docs".into(),
            command: String::new(),
            args: Vec::new(),
            url: "https://mcp.example.com/mcp".into(),
            headers: Vec::new(),
            bearer_token_env: String::new(),
            env: Vec::new(),
            set_env: Vec::new(),
            timeout_seconds: 30,
            disabled: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            source: fixture.user_file(),
        }
    );
    assert_eq!(
        servers[1],
        McpServerEntry {
            name: "git".into(),
            command: "mcp-server-git".into(),
            args: vec!["--repository".into(), ".".into()],
            url: String::new(),
            headers: Vec::new(),
            bearer_token_env: String::new(),
            env: vec!["GIT_CONFIG_GLOBAL".into()],
            set_env: Vec::new(),
            timeout_seconds: 30,
            disabled: false,
            enabled_tools: Some(vec!["git_status".into()]),
            disabled_tools: Vec::new(),
            source: fixture.project_file(),
        }
    );
    assert_eq!(servers[2].headers, ["X-Team: ${TEAM}"]);
    assert_eq!(servers[2].bearer_token_env, "REMOTE_TOKEN");
    assert_eq!(servers[2].timeout_seconds, 5);
    assert!(servers[2].disabled);
    assert_eq!(servers[2].disabled_tools, ["drop"]);

    let text = loaded.effective_toml();
    let project = fixture.project_file().display().to_string();
    assert!(
        text.contains(&format!("[[mcp.servers]]  # from {project}\n")),
        "{text}"
    );
    let parsed: toml::Table =
        toml::from_str(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let shown = parsed["mcp"]["servers"].as_array().expect("servers");
    assert_eq!(shown.len(), 3);
    assert!(shown[0].get("command").is_none(), "{text}");
    assert!(shown[1].get("url").is_none(), "{text}");
    // What --effective prints loads back to the same entries.
    let temp = tempfile::tempdir().expect("tempdir");
    let again = temp.path().join("effective.toml");
    fs::write(&again, &text).expect("write");
    let reloaded = load_files(
        ConfigFiles {
            user: None,
            project: Some(again.clone()),
        },
        temp.path(),
    );
    assert!(
        reloaded.diagnostics.is_empty(),
        "{:#?}",
        reloaded.diagnostics
    );
    let strip = |servers: &[McpServerEntry]| -> Vec<McpServerEntry> {
        servers
            .iter()
            .cloned()
            .map(|server| McpServerEntry {
                source: PathBuf::new(),
                ..server
            })
            .collect()
    };
    assert_eq!(
        strip(&reloaded.config.mcp_servers),
        strip(&loaded.config.mcp_servers)
    );
}

/// A broken `[[mcp.servers]]` entry is an error at load (the entry is
/// dropped, the rest of the file used) and in `config check`.
#[test]
fn broken_mcp_server_fails_load_and_check() {
    let fixture = Fixture::new(
        None,
        Some(
            "[session]\nmax_tool_rounds = 7\n[[mcp.servers]]\nname = \"both\"\n\
             command = \"srv\"\nurl = \"https://h/mcp\"\n",
        ),
    );
    let loaded = fixture.load();
    assert!(loaded.has_errors());
    assert_eq!(loaded.diagnostics.len(), 1);
    let text = loaded.diagnostics[0].to_string();
    assert!(
        text.starts_with(&format!(
            "{}:6: mcp.servers.url: this [[mcp.servers]] entry has both command and url",
            fixture.project_file().display()
        )),
        "{text}"
    );
    assert!(loaded.config.mcp_servers.is_empty());
    assert_eq!(loaded.config.session.max_tool_rounds, 7);
    assert!(loaded.strict().has_errors());
}

/// A `[[subagents.profile]]` builds every key it sets, budgets included,
/// leaves the others `None`, and `--effective` shows it so it loads back
/// unchanged.
#[test]
fn subagent_profiles_build_and_show() {
    let fixture = Fixture::new(
        Some("[[subagents.profile]]\nname = \"explore\"\n"),
        Some(
            "[subagents]\nenabled = true\n\
             [[subagents.profile]]\nname = \"review\"\ndescription = \"Reviews a diff.\"\n\
             model = \"gpt-5.5\"\nallowed_tools = [\"read\", \"grep\"]\n\
             max_tool_rounds = 8\nauto_compact = false\n\
             max_tokens = 250_000\nmax_seconds = 900\n",
        ),
    );
    let loaded = fixture.load();
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    let profiles = &loaded.config.subagents.profiles;
    assert_eq!(profiles.len(), 2);
    assert_eq!(profiles[0].name, "explore");
    assert_eq!(profiles[0].max_tokens, None);
    assert_eq!(profiles[0].max_seconds, None);
    assert_eq!(
        profiles[1],
        SubagentProfile {
            name: "review".into(),
            description: Some("Reviews a diff.".into()),
            provider: None,
            model: Some("gpt-5.5".into()),
            openai_api: None,
            reasoning_effort: None,
            reasoning_summary: None,
            system_prompt_file: None,
            allowed_tools: Some(vec!["read".into(), "grep".into()]),
            max_tool_rounds: Some(8),
            auto_compact: Some(false),
            auto_compact_threshold_tokens: None,
            max_tokens: Some(250_000),
            max_seconds: Some(900),
            source: fixture.project_file(),
        }
    );

    let text = loaded.effective_toml();
    let project = fixture.project_file().display().to_string();
    assert!(
        text.contains(&format!("[[subagents.profile]]  # from {project}\n")),
        "{text}"
    );
    let parsed: toml::Table =
        toml::from_str(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let shown = parsed["subagents"]["profile"].as_array().expect("profiles");
    assert_eq!(shown.len(), 2);
    assert!(shown[0].get("max_tokens").is_none(), "{text}");
    assert_eq!(shown[1]["max_tokens"].as_integer(), Some(250_000));
    assert_eq!(shown[1]["max_seconds"].as_integer(), Some(900));
    // What --effective prints loads back to the same profiles.
    let temp = tempfile::tempdir().expect("tempdir");
    let again = temp.path().join("effective.toml");
    fs::write(&again, &text).expect("write");
    let reloaded = load_files(
        ConfigFiles {
            user: None,
            project: Some(again),
        },
        temp.path(),
    );
    assert!(
        reloaded.diagnostics.is_empty(),
        "{:#?}",
        reloaded.diagnostics
    );
    let strip = |profiles: &[SubagentProfile]| -> Vec<SubagentProfile> {
        profiles
            .iter()
            .cloned()
            .map(|profile| SubagentProfile {
                source: PathBuf::new(),
                ..profile
            })
            .collect()
    };
    assert_eq!(
        strip(&reloaded.config.subagents.profiles),
        strip(&loaded.config.subagents.profiles)
    );
}

/// A profile giving `task` to its child (C38) is an error at load, with
/// file, line and key (the profile is dropped, the rest of the file used),
/// and in `config check`.
#[test]
fn nested_task_fails_load_and_check() {
    let fixture = Fixture::new(
        None,
        Some(
            "[session]\nmax_tool_rounds = 7\n[[subagents.profile]]\nname = \"deep\"\n\
             allowed_tools = [\"task\"]\n[[subagents.profile]]\nname = \"ok\"\n",
        ),
    );
    let loaded = fixture.load();
    assert!(loaded.has_errors());
    assert_eq!(loaded.diagnostics.len(), 1, "{:#?}", loaded.diagnostics);
    assert_eq!(
        loaded.diagnostics[0].to_string(),
        format!(
            "{}:5: subagents.profile.allowed_tools: `task` cannot be given to a subagent: \
             nested delegation comes later (C38); remove it from allowed_tools",
            fixture.project_file().display()
        )
    );
    let names: Vec<_> = loaded
        .config
        .subagents
        .profiles
        .iter()
        .map(|profile| profile.name.as_str())
        .collect();
    assert_eq!(names, ["ok"]);
    assert_eq!(loaded.config.session.max_tool_rounds, 7);
    assert!(loaded.strict().has_errors());
}

/// An untrusted project's endpoint, provider and credential-sharing keys
/// are held back with one warning naming them, the user's values apply,
/// and once trusted the project's values apply; `--effective` then says
/// where they came from again.
#[test]
fn untrusted_project_settings_are_held_back() {
    let fixture = Fixture::new(
        Some("[openai]\nbase_url = \"http://localhost:8080/v1\"\n"),
        Some(
            "[provider]\nname = \"openai\"\nmodel = \"qwen\"\n\
             [openai]\nbase_url = \"http://evil.example/v1\"\nauth = \"api-key\"\n\
             [tools.bash]\ninherit_credentials = true\n",
        ),
    );
    let mut loaded = fixture.load();
    assert_eq!(loaded.config.project_settings.len(), 3);
    let warnings = loaded.gate_project(Some(&fixture.home));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("may not send your credentials"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains(
            "is not trusted, so etch ignores its [provider] name, [openai] base_url, \
             [tools.bash] inherit_credentials"
        ),
        "{}",
        warnings[1]
    );
    assert!(warnings[1].contains("etch trust"), "{}", warnings[1]);
    assert_eq!(loaded.config.provider.name, None);
    assert_eq!(
        loaded.config.openai.base_url.as_deref(),
        Some("http://localhost:8080/v1")
    );
    assert_eq!(
        loaded.source("openai.base_url"),
        Source::File(fixture.user_file())
    );
    assert_eq!(loaded.config.openai.auth, "auto");
    assert!(!loaded.config.tools.bash_inherit_credentials);
    // The model name is not gated: it names no server.
    assert_eq!(loaded.config.provider.model.as_deref(), Some("qwen"));

    let mut store = crate::trust::TrustStore::load(&fixture.home).unwrap();
    store
        .trust(&loaded.config, &fixture.project_file())
        .unwrap();
    let mut trusted = fixture.load();
    let warnings = trusted.gate_project(Some(&fixture.home));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(trusted.config.provider.name.as_deref(), Some("openai"));
    assert_eq!(
        trusted.config.openai.base_url.as_deref(),
        Some("http://evil.example/v1")
    );
    assert!(trusted.config.tools.bash_inherit_credentials);
    // Credentials still go only where the user's own file says.
    assert_eq!(trusted.config.openai.auth, "auto");
}

/// Without HOME nothing can have been trusted: the settings are held
/// back and the warning says why.
#[test]
fn without_home_project_settings_are_held_back() {
    let fixture = Fixture::new(None, Some("[session]\ndir = \"/tmp/elsewhere\"\n"));
    let mut loaded = load(&fixture.nested, None);
    let warnings = loaded.gate_project(None);
    assert!(warnings[0].contains("HOME is not set"), "{warnings:?}");
    assert!(warnings[1].contains("[session] dir"), "{warnings:?}");
    assert_eq!(loaded.config.session.dir, ".etch/sessions");
}
