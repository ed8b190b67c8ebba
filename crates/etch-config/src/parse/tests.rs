//! Tests of the per-file walk: each kind of bad input yields one diagnostic
//! with the right line, key and wording, and valid values form the layer.

use super::*;

/// The path every test file pretends to be.
const PATH: &str = "/p/.etch/config.toml";

/// Parses `text` and renders each diagnostic as `{severity}: {display}`.
fn findings(text: &str) -> (Option<Layer>, Vec<String>) {
    let (layer, diagnostics) = parse(Path::new(PATH), text);
    let rendered = diagnostics
        .iter()
        .map(|diagnostic| format!("{}: {diagnostic}", diagnostic.severity))
        .collect();
    (layer, rendered)
}

/// The single finding for `text`.
fn only_finding(text: &str) -> String {
    let (_, found) = findings(text);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().expect("one finding")
}

/// A valid file yields its values and no findings.
#[test]
fn valid_file_fills_the_layer() {
    let (layer, found) = findings(
        "[session]\nmax_tool_rounds = 8\n[tools.bash]\ninherit_credentials = true\n\
         [openai]\napi = \"responses\"\n",
    );
    assert!(found.is_empty(), "{found:#?}");
    let layer = layer.expect("layer");
    assert_eq!(layer.scalars["session.max_tool_rounds"], Value::Integer(8));
    assert_eq!(
        layer.scalars["tools.bash.inherit_credentials"],
        Value::Boolean(true)
    );
    assert_eq!(
        layer.scalars["openai.api"],
        Value::String("responses".into())
    );
    assert_eq!(layer.path, PathBuf::from(PATH));
}

/// A syntax error names the file and line, and drops the whole file.
#[test]
fn syntax_error_names_line_and_drops_file() {
    let (layer, found) = findings("[session]\nmax_tool_rounds = 8\ndir = \n");
    assert!(layer.is_none());
    assert_eq!(found.len(), 1);
    assert!(
        found[0].starts_with(&format!("error: {PATH}:3: invalid TOML: ")),
        "{}",
        found[0]
    );
    assert!(
        found[0].ends_with("nothing from this file is used"),
        "{}",
        found[0]
    );
}

/// An unknown key is a warning on its line, listing the table's keys and
/// suggesting the near miss.
#[test]
fn unknown_key_lists_valid_keys() {
    assert_eq!(
        only_finding("[openai]\napi = \"chat\"\napii = \"chat\"\n"),
        format!(
            "warning: {PATH}:3: openai.apii: unknown key `apii` in [openai]; did you mean `api`?; \
             valid keys: base_url, api, reasoning_effort, reasoning_summary, stream_usage, transport, auth"
        )
    );
}

/// An unknown table is a warning listing the valid tables.
#[test]
fn unknown_table_lists_valid_tables() {
    assert_eq!(
        only_finding("\n[sesion]\ndir = \"x\"\n"),
        format!(
            "warning: {PATH}:2: sesion: unknown table `sesion`; did you mean `session`?; valid tables: \
             session, context, provider, openai, anthropic, prompt, tools, subagents, acp, sandbox, approval, process, serve, plugins, mcp, prices, hooks"
        )
    );
    assert_eq!(
        only_finding("[tools.bsh]\nx = 1\n"),
        format!(
            "warning: {PATH}:1: tools.bsh: unknown key `bsh` in [tools]; did you mean `bash`?; \
             valid keys: active, profile, bash, read"
        )
    );
}

/// A top-level scalar points at the table that declares the key.
#[test]
fn top_level_key_suggests_its_table() {
    let finding = only_finding("model = \"gpt-5.5\"\n");
    assert!(
        finding.contains("did you mean `provider.model`?"),
        "{finding}"
    );
    assert!(finding.starts_with("warning: "), "{finding}");
}

/// A wrong type names what was expected and what was found; the value is
/// not used.
#[test]
fn wrong_type_is_an_error() {
    let text = "[session]\ndir = \"d\"\nmax_tool_rounds = \"many\"\n";
    assert_eq!(
        only_finding(text),
        format!("error: {PATH}:3: session.max_tool_rounds: expected an integer, found a string")
    );
    let (layer, _) = findings(text);
    let layer = layer.expect("layer");
    assert!(!layer.scalars.contains_key("session.max_tool_rounds"));
    assert!(layer.scalars.contains_key("session.dir"));
}

/// A provider name outside the allowed set lists the allowed names.
#[test]
fn provider_name_outside_allowed_set() {
    assert_eq!(
        only_finding("[provider]\nname = \"opneai\"\n"),
        format!(
            "error: {PATH}:2: provider.name: \"opneai\" is not allowed; \
             expected one of: echo, openai, anthropic"
        )
    );
}

/// An integer out of range says the range.
#[test]
fn integer_out_of_range() {
    assert_eq!(
        only_finding("[session]\n\nmax_tool_rounds = 0\n"),
        format!(
            "error: {PATH}:3: session.max_tool_rounds: 0 is out of range; \
             expected an integer from 1 to 4294967295"
        )
    );
}

/// A hook with a broken regex is an error on the matcher's line, and the
/// hook is dropped rather than matching everything.
#[test]
fn invalid_hook_regex() {
    let text = "[[hooks.PreToolUse]]\nmatcher = \"(unclosed\"\ncommand = \"audit\"\n";
    let finding = only_finding(text);
    assert!(
        finding.starts_with(&format!(
            "error: {PATH}:2: hooks.PreToolUse.matcher: \"(unclosed\" is not a valid regex: "
        )),
        "{finding}"
    );
    let (layer, _) = findings(text);
    assert!(layer.expect("layer").entries.is_empty());
}

/// An unknown hook event lists the valid events.
#[test]
fn unknown_hook_event() {
    assert_eq!(
        only_finding("[[hooks.PreTooluse]]\ncommand = \"x\"\n"),
        format!(
            "error: {PATH}:1: hooks.PreTooluse: unknown hook event `PreTooluse`; did you mean \
             `PreToolUse`?; expected one of: SessionStart, UserPromptSubmit, TurnStart, \
             TurnComplete, ContextBuild, PreToolUse, PostToolUse, PreCompact, PostCompact, \
             SubagentStart, SubagentStop"
        )
    );
}

/// An enabled hook needs a command; a disabled one does not.
#[test]
fn hook_with_empty_command() {
    let expected = format!(
        "error: {PATH}:2: hooks.PostToolUse.command: an enabled [[hooks.PostToolUse]] entry \
         needs a non-empty `command`; set disabled = true to keep the entry switched off"
    );
    assert_eq!(
        only_finding("\n[[hooks.PostToolUse]]\ncommand = \"  \"\n"),
        expected
    );
    assert_eq!(
        only_finding("\n[[hooks.PostToolUse]]\nmatcher = \"*\"\n"),
        expected
    );
    let (layer, found) = findings("[[hooks.PostToolUse]]\ndisabled = true\n");
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(layer.expect("layer").entries.len(), 1);
}

/// `[[prices]]` needs a model, an input and an output price; entries of
/// both files add up, and the last one for a model wins.
#[test]
fn prices_entries() {
    let found = only_finding("[[prices]]\nmodel = \"m\"\noutput = 2\n");
    assert_eq!(
        found,
        format!("error: {PATH}:1: prices.input: every [[prices]] entry needs a non-empty `input`")
    );
    let dir = tempfile::tempdir().expect("dir");
    let user = dir.path().join("user.toml");
    let project = dir.path().join("project.toml");
    std::fs::write(&user, "[[prices]]\nmodel = \"m\"\ninput = 1\noutput = 2\n").expect("user");
    std::fs::write(
        &project,
        "[[prices]]\nmodel = \"m\"\ninput = 3.5\noutput = 4\ncached_input = 0.5\n",
    )
    .expect("project");
    let loaded = crate::load::load_files(
        crate::discover::ConfigFiles {
            user: Some(user),
            project: Some(project),
        },
        dir.path(),
    );
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    assert_eq!(loaded.config.prices.len(), 2);
    let price = loaded.config.price_of("m").expect("a price");
    assert_eq!(
        (price.input, price.output, price.cached_input),
        (3.5, 4.0, Some(0.5))
    );
    assert!(loaded.config.price_of("other").is_none());
    let effective = loaded.effective_toml();
    assert!(
        effective.contains("[[prices]]") && effective.contains("input = 3.5"),
        "{effective}"
    );
}

/// Plugins need a name always and a command when enabled.
#[test]
fn plugin_requirements() {
    let (layer, found) = findings("[[plugins]]\ncommand = \"run\"\n[[plugins]]\nname = \"x\"\n");
    assert_eq!(
        found,
        [
            format!(
                "error: {PATH}:1: plugins.name: every [[plugins]] entry needs a non-empty `name`"
            ),
            format!(
                "error: {PATH}:3: plugins.command: an enabled [[plugins]] entry needs a non-empty \
                 `command`; set disabled = true to keep the entry switched off"
            ),
        ]
    );
    assert!(layer.expect("layer").entries.is_empty());
}

/// A credential key is an error wherever it appears, and says where
/// credentials come from instead.
#[test]
fn credential_keys_are_errors() {
    let finding = only_finding("[openai]\nbase_url = \"https://x\"\napi_key = \"sk-123\"\n");
    assert!(
        finding.starts_with(&format!(
            "error: {PATH}:3: openai.api_key: `api_key` looks like a credential; etch never reads \
             credentials from config files"
        )),
        "{finding}"
    );
    assert!(
        finding.contains("flag") && finding.contains("environment variable"),
        "{finding}"
    );
    assert!(
        !finding.contains("sk-123"),
        "the value must never be echoed"
    );

    for text in [
        "token = \"t\"\n",
        "[secrets]\nx = 1\n",
        "[[plugins]]\nname = \"p\"\ncommand = \"c\"\npassword = \"p\"\n",
        "[tools.bash]\nauth_token = \"t\"\n",
    ] {
        let finding = only_finding(text);
        assert!(
            finding.starts_with("error: ") && finding.contains("looks like a credential"),
            "{finding}"
        );
    }

    let (layer, found) = findings(
        "[custom]\nnested = { secret = \"s\" }\n[openai.extra]\napi_key = \"k\"\n\
         [[plugins]]\nname = \"p\"\ncommand = \"c\"\nextra = { token = \"t\" }\n",
    );
    let errors: Vec<_> = found
        .iter()
        .filter(|finding| finding.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 3, "{found:#?}");
    assert!(
        errors[0].contains(":2: custom.nested.secret: `secret` looks like a credential"),
        "{found:#?}"
    );
    assert!(
        errors[1].contains(":4: openai.extra.api_key: "),
        "{found:#?}"
    );
    assert!(
        errors[2].contains(":8: plugins.extra.token: "),
        "{found:#?}"
    );
    assert!(
        layer.expect("layer").entries.is_empty(),
        "an entry holding a credential is dropped"
    );
}

/// Findings come in line order, whatever the table order.
#[test]
fn findings_are_sorted_by_line() {
    let (_, found) = findings("[session]\nmax_tool_rounds = 0\n[context]\nauto_compact = 1\n");
    assert_eq!(found.len(), 2);
    assert!(
        found[0].contains(":2: session.max_tool_rounds"),
        "{found:#?}"
    );
    assert!(found[1].contains(":4: context.auto_compact"), "{found:#?}");
}

/// Array tables written as plain tables, and plain tables written as
/// scalars, say which shape is expected.
#[test]
fn wrong_table_shapes() {
    assert_eq!(
        only_finding("[plugins]\nname = \"p\"\n"),
        format!(
            "error: {PATH}:1: plugins: expected an array of tables ([[plugins]]), found a table"
        )
    );
    assert_eq!(
        only_finding("session = 3\n"),
        format!("error: {PATH}:1: session: expected a table ([session]), found an integer")
    );
    assert_eq!(
        only_finding("hooks = []\n"),
        format!("error: {PATH}:1: hooks: expected a table ([hooks]), found an array")
    );
}

/// Unknown keys inside an entry warn but keep the entry.
#[test]
fn unknown_entry_key_keeps_entry() {
    let (layer, found) = findings("[[plugins]]\nname = \"p\"\ncommand = \"c\"\ntimeout = 5\n");
    assert_eq!(found.len(), 1);
    assert!(
        found[0].starts_with(&format!("warning: {PATH}:4: plugins.timeout: unknown key")),
        "{}",
        found[0]
    );
    assert!(
        found[0].contains("did you mean `timeout_seconds`?"),
        "{}",
        found[0]
    );
    assert_eq!(layer.expect("layer").entries.len(), 1);
}

/// Hook entries keep source order across different events.
#[test]
fn entries_keep_source_order_across_events() {
    let (layer, found) = findings(
        "[[hooks.TurnStart]]\ncommand = \"1\"\n[[hooks.PreToolUse]]\ncommand = \"2\"\n\
         [[hooks.TurnStart]]\ncommand = \"3\"\n[[hooks.ContextBuild]]\ncommand = \"4\"\n",
    );
    assert!(found.is_empty(), "{found:#?}");
    let commands: Vec<_> = layer
        .expect("layer")
        .entries
        .iter()
        .map(|entry| entry.values["command"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(commands, ["1", "2", "3", "4"].map(|c| Some(c.to_owned())));
}

/// Subagent profiles are entries of `[[subagents.profile]]` beside the
/// `[subagents]` scalars, and inline forms work too.
#[test]
fn nested_and_inline_tables() {
    let (layer, found) = findings(
        "[subagents]\nenabled = true\n[[subagents.profile]]\nname = \"explore\"\n\
         allowed_tools = [\"ls\"]\n[context]\nauto_compact = true\nplugins = 1\n",
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("context.plugins: unknown key"),
        "{}",
        found[0]
    );
    let layer = layer.expect("layer");
    assert_eq!(layer.scalars["subagents.enabled"], Value::Boolean(true));
    assert_eq!(layer.entries.len(), 1);
    assert_eq!(layer.entries[0].table.name, "subagents.profile");

    let (layer, found) = findings(
        "openai = { api = \"responses\" }\nplugins = [{ name = \"p\", command = \"c\" }]\n",
    );
    assert!(found.is_empty(), "{found:#?}");
    let layer = layer.expect("layer");
    assert_eq!(
        layer.scalars["openai.api"],
        Value::String("responses".into())
    );
    assert_eq!(layer.entries.len(), 1);
}

/// A valid stdio and a valid HTTP `[[mcp.servers]]` entry join the layer,
/// under `[mcp]` or inline, and a disabled entry may set neither.
#[test]
fn valid_mcp_servers() {
    let (layer, found) = findings(
        "[[mcp.servers]]\nname = \"git\"\ncommand = \"mcp-server-git\"\nargs = [\"-r\", \".\"]\n\
         env = [\"HOME\"]\n\
         [[mcp.servers]]\nname = \"docs_2\"\nurl = \"https://mcp.example.com/mcp\"\n\
         headers = [\"X-Team: core\", \"Authorization: Bearer ${DOCS_TOKEN}\"]\n\
         bearer_token_env = \"DOCS_TOKEN\"\n\
         [[mcp.servers]]\nname = \"off\"\ndisabled = true\n",
    );
    assert!(found.is_empty(), "{found:#?}");
    let layer = layer.expect("layer");
    assert_eq!(layer.entries.len(), 3);
    assert!(
        layer
            .entries
            .iter()
            .all(|entry| entry.table.name == "mcp.servers" && entry.name == "mcp.servers")
    );

    let (layer, found) =
        findings("mcp = { servers = [{ name = \"a-b\", url = \"http://127.0.0.1:8080/mcp\" }] }\n");
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(layer.expect("layer").entries.len(), 1);
}

/// Each `[[mcp.servers]]` rule names the file, line and key, says what to
/// do, and drops the entry.
#[test]
fn mcp_server_rules() {
    let cases = [
        (
            "[[mcp.servers]]\nname = \"x\"\n",
            format!(
                "error: {PATH}:1: mcp.servers.command: an enabled [[mcp.servers]] entry needs \
                 command (a stdio server) or url (an HTTP server); set disabled = true to keep \
                 the entry switched off"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\ncommand = \"srv\"\nurl = \"https://h/mcp\"\n",
            format!(
                "error: {PATH}:4: mcp.servers.url: this [[mcp.servers]] entry has both command \
                 and url; keep command for a stdio server or url for an HTTP server"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"my server\"\ncommand = \"srv\"\n",
            format!(
                "error: {PATH}:2: mcp.servers.name: \"my server\" is not a valid server name; use \
                 1 to 32 ASCII letters, digits, `_` or `-` (^[A-Za-z0-9_-]{{1,32}}$) without \
                 `__`, as it becomes part of tool names (mcp__<name>__<tool>)"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\nurl = \"ftp://h/mcp\"\n",
            format!(
                "error: {PATH}:3: mcp.servers.url: the URL must start with http:// or https:// \
                 (a Streamable HTTP endpoint)"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\nurl = \"https://h/mcp\"\nargs = [\"-v\"]\n",
            format!(
                "error: {PATH}:4: mcp.servers.args: args applies to command servers and this \
                 entry sets url; remove args, or use command instead of url"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\nurl = \"https://h/mcp\"\nenv = [\"HOME\"]\n",
            format!(
                "error: {PATH}:4: mcp.servers.env: env applies to command servers and this \
                 entry sets url; remove env, or use command instead of url"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\ncommand = \"srv\"\nheaders = [\"A: b\"]\n",
            format!(
                "error: {PATH}:4: mcp.servers.headers: headers applies to url servers and this \
                 entry sets command; remove headers, or use url instead of command"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\ncommand = \"srv\"\nbearer_token_env = \"T\"\n",
            format!(
                "error: {PATH}:4: mcp.servers.bearer_token_env: bearer_token_env applies to url \
                 servers and this entry sets command; remove bearer_token_env, or use url \
                 instead of command"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\nurl = \"https://h\"\nheaders = [\"A: b\", \"No colon\"]\n",
            format!(
                "error: {PATH}:4: mcp.servers.headers: item 2 is not \"Name: value\": a non-empty \
                 name of letters, digits and !#$%&'*+-.^_`|~, a colon, then a value on one line"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\nurl = \"https://h\"\n\
             headers = [\"authorization: Bearer sk-live-123\"]\n",
            format!(
                "error: {PATH}:4: mcp.servers.headers: the authorization header (item 1) puts a \
                 secret in the config file; use bearer_token_env = \"VAR\" or a ${{VAR}} reference"
            ),
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\nurl = \"https://h\"\nbearer_token_env = \"1TOKEN\"\n",
            format!(
                "error: {PATH}:4: mcp.servers.bearer_token_env: \"1TOKEN\" is not an environment \
                 variable name; use ASCII letters, digits and `_`, not starting with a digit \
                 (^[A-Za-z_][A-Za-z0-9_]*$)"
            ),
        ),
        (
            "[[mcp.servers]]\ncommand = \"srv\"\n",
            format!(
                "error: {PATH}:1: mcp.servers.name: every [[mcp.servers]] entry needs a \
                 non-empty `name`"
            ),
        ),
    ];
    for (text, expected) in cases {
        let (layer, found) = findings(text);
        assert_eq!(found, [expected], "{text}");
        assert!(layer.expect("layer").entries.is_empty(), "{text}");
    }
}

/// A secret in a header is never echoed, and `[mcp]` rejects what is not
/// `[[mcp.servers]]`.
#[test]
fn mcp_server_shapes_and_secrets() {
    let finding = only_finding(
        "[[mcp.servers]]\nname = \"x\"\nurl = \"https://h\"\nheaders = [\"X-Api-Key: sk-9\"]\n",
    );
    assert!(
        finding.contains("the X-Api-Key header (item 1) puts a secret"),
        "{finding}"
    );
    assert!(!finding.contains("sk-9"), "{finding}");
    assert_eq!(
        only_finding("[mcp]\nservers = 1\n"),
        format!(
            "error: {PATH}:2: mcp.servers: expected an array of tables ([[mcp.servers]]), found \
             an integer"
        )
    );
    let finding = only_finding("[mcp.server]\nname = \"x\"\n");
    assert!(
        finding.starts_with(&format!(
            "warning: {PATH}:1: mcp.server: unknown table `mcp.server`; did you mean \
             `mcp.servers`?"
        )),
        "{finding}"
    );
}

/// A `[[subagents.profile]]` with its token and time budgets joins the
/// layer with both values.
#[test]
fn valid_profile_with_budgets() {
    let (layer, found) = findings(
        "[[subagents.profile]]\nname = \"review_2\"\nallowed_tools = [\"read\", \"grep\"]\n\
         max_tokens = 200_000\nmax_seconds = 600\n",
    );
    assert!(found.is_empty(), "{found:#?}");
    let layer = layer.expect("layer");
    assert_eq!(layer.entries.len(), 1);
    let values = &layer.entries[0].values;
    assert_eq!(values["max_tokens"], Value::Integer(200_000));
    assert_eq!(values["max_seconds"], Value::Integer(600));
}

/// Each `[[subagents.profile]]` rule names the file, line and key, says
/// what to do, and drops the entry: `task` in `allowed_tools` (C38), a bad
/// name, and budgets below 1.
#[test]
fn subagent_profile_rules() {
    let cases = [
        (
            "[[subagents.profile]]\nname = \"explore\"\n\
             allowed_tools = [\"read\", \"task\"]\n",
            format!(
                "error: {PATH}:3: subagents.profile.allowed_tools: `task` cannot be given to a \
                 subagent: nested delegation comes later (C38); remove it from allowed_tools"
            ),
        ),
        (
            "[[subagents.profile]]\nname = \"code review\"\n",
            format!(
                "error: {PATH}:2: subagents.profile.name: \"code review\" is not a valid profile \
                 name; use 1 to 32 ASCII letters, digits, `_` or `-` (^[A-Za-z0-9_-]{{1,32}}$), \
                 as it appears in the task tool's schema and in codenames"
            ),
        ),
        (
            "[[subagents.profile]]\nname = \"explore\"\nmax_tokens = 0\n",
            format!(
                "error: {PATH}:3: subagents.profile.max_tokens: 0 is out of range; expected an \
                 integer >= 1"
            ),
        ),
        (
            "[[subagents.profile]]\nname = \"explore\"\n\nmax_seconds = 0\n",
            format!(
                "error: {PATH}:4: subagents.profile.max_seconds: 0 is out of range; expected an \
                 integer >= 1"
            ),
        ),
        // The C38 rule runs only once every key passed on its own.
        (
            "[[subagents.profile]]\nname = \"a.b\"\nallowed_tools = [\"task\"]\n",
            format!(
                "error: {PATH}:2: subagents.profile.name: \"a.b\" is not a valid profile name; \
                 use 1 to 32 ASCII letters, digits, `_` or `-` (^[A-Za-z0-9_-]{{1,32}}$), as it \
                 appears in the task tool's schema and in codenames"
            ),
        ),
    ];
    for (text, expected) in cases {
        let (layer, found) = findings(text);
        assert_eq!(found, [expected], "{text}");
        assert!(layer.expect("layer").entries.is_empty(), "{text}");
    }
}
