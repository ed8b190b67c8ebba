//! The chat's slash commands: their names, one-line help, and parsing of
//! what the user typed. Slash commands are local control input: they
//! never become model context and never enter the steering queue (they
//! run at once or are refused: E-CHAT-05, E-CHAT-15, P-SLASH-06 in
//! docs/requirements.md). An unknown `/x` is `unknown command: /x` and
//! nothing is sent (C28). This module must not know what the commands
//! do.

use std::fmt::Write as _;

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// `/help`.
    Help,
    /// `/quit` or `/exit`.
    Quit,
    /// `/new`: start a new session.
    New,
    /// `/resume [prefix]`: pick a recent session.
    Resume(Option<String>),
    /// `/name <title>`: rename the session.
    Name(String),
    /// `/compact [focus]`.
    Compact(Option<String>),
    /// `/context`: context statistics.
    Context,
    /// `/context dump [path]`.
    ContextDump(Option<String>),
    /// `/status`: the session's counters.
    Status,
    /// `/model [provider/]model`: pick or set the model.
    Model(Option<String>),
    /// `/thinking [level]`.
    Thinking(Option<String>),
    /// `/fork`: a new session from an earlier prompt.
    Fork,
    /// `/tree`: move to another point of the session tree.
    Tree,
    /// `/export [html|md|jsonl] [path]`.
    Export {
        /// Format, `html` unless given.
        format: String,
        /// Where to write, when given.
        path: Option<String>,
    },
    /// `/copy`: the last answer to the clipboard.
    Copy,
    /// `/reload`: config, AGENTS.md, skills.
    Reload,
    /// `/hotkeys`.
    Hotkeys,
    /// `/ps`: the background processes, to stop one.
    Ps,
    /// `/skill:NAME [text]`.
    Skill {
        /// Skill name.
        name: String,
        /// Text after it.
        text: String,
    },
    /// A command etch does not have.
    Unknown(String),
    /// A known command used wrongly: what to type instead.
    Usage(String),
}

/// Every command with its help line, in the order `/help` lists them.
pub const COMMANDS: [(&str, &str); 20] = [
    ("/help", "list the commands"),
    ("/new", "start a new session"),
    (
        "/resume",
        "continue a recent session (a picker; or /resume PREFIX)",
    ),
    ("/name", "/name TITLE renames this session"),
    (
        "/compact",
        "summarize older history now; /compact FOCUS steers it, /compact force compacts a short session",
    ),
    (
        "/context",
        "what the context holds, in bytes and tokens; /context dump [PATH] writes it out",
    ),
    (
        "/status",
        "this session's counters: turns, calls, tokens, bytes",
    ),
    (
        "/model",
        "switch the model (a picker; or /model [PROVIDER/]MODEL)",
    ),
    (
        "/thinking",
        "reasoning effort: off, minimal, low, medium, high, xhigh",
    ),
    ("/fork", "a new session from an earlier prompt of this one"),
    (
        "/tree",
        "move to another point of the session tree, optionally summarizing",
    ),
    (
        "/export",
        "/export [html|md|jsonl] [PATH] writes the transcript",
    ),
    (
        "/copy",
        "copy the last answer (OSC 52, or a file when that cannot work)",
    ),
    ("/reload", "read config, AGENTS.md and skills again"),
    ("/hotkeys", "the keys the chat knows"),
    (
        "/ps",
        "the background processes the model started; Enter stops one (its whole group)",
    ),
    ("/skill:NAME", "run a skill: /skill:NAME [TEXT]"),
    ("/quit", "leave (also /exit, Ctrl-D)"),
    ("/exit", "leave"),
    (
        "!COMMAND",
        "run a shell command and add its output to the context (!!COMMAND: without)",
    ),
];

/// The keys `/hotkeys` lists.
pub const HOTKEYS: [(&str, &str); 15] = [
    (
        "Enter",
        "send (while a run is active: steer it, admitted after the current tools)",
    ),
    ("Alt+Enter, Shift+Enter, Ctrl+J", "new line"),
    ("Esc", "cancel the running answer or tool; close a picker"),
    (
        "Ctrl+C",
        "cancel the run; clear the draft; twice on an empty draft: quit",
    ),
    ("Ctrl+D", "quit on an empty draft (prints how to resume)"),
    ("Up / Down", "earlier prompts (history); move in a picker"),
    ("Tab", "complete a command, skill or path"),
    ("@", "insert a project file path by fuzzy search"),
    ("Ctrl+O", "show the last tool output in full"),
    ("Ctrl+T", "list the running subagents and stop one"),
    ("Ctrl+L", "draw the live area again"),
    ("Ctrl+A / Ctrl+E", "start / end of line"),
    ("Ctrl+U / Ctrl+K", "delete to start / end of line"),
    ("Ctrl+W", "delete the word before the caret"),
    ("Alt+B / Alt+F", "word left / right"),
];

/// Parses `text` when it is a slash command (it starts with `/`).
pub fn parse(text: &str) -> Option<Slash> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (rest, ""),
    };
    // A path (`/usr/lib/x fails`) is a prompt, not a command; but a
    // command run into more text (`/name/quit now`, a refused `/name`
    // and what was typed after it) is never sent to the model.
    if let Some((first, _)) = name.split_once('/') {
        if is_command(first) {
            return Some(Slash::Usage(format!(
                "\"{text}\" starts with /{first} and runs on: send one command at a time, or a prompt without a leading /{first}"
            )));
        }
        return None;
    }
    let arg = || (!args.is_empty()).then(|| args.to_owned());
    Some(match name {
        "help" => Slash::Help,
        "quit" | "exit" => Slash::Quit,
        "new" => Slash::New,
        "resume" => Slash::Resume(arg()),
        "name" if args.is_empty() => Slash::Usage("give the new name: /name TITLE".into()),
        "name" => Slash::Name(args.to_owned()),
        "compact" => Slash::Compact(arg()),
        "context" => match args
            .split_once(char::is_whitespace)
            .map_or((args, ""), |(a, b)| (a, b.trim()))
        {
            ("", _) => Slash::Context,
            ("dump", path) => Slash::ContextDump((!path.is_empty()).then(|| path.to_owned())),
            (other, _) => Slash::Usage(format!(
                "/context takes no \"{other}\": use /context or /context dump [PATH]"
            )),
        },
        "status" => Slash::Status,
        "model" => Slash::Model(arg()),
        "thinking" => Slash::Thinking(arg()),
        "fork" => Slash::Fork,
        "tree" => Slash::Tree,
        "export" => {
            let mut words = args.split_whitespace();
            let first = words.next();
            match first {
                None => Slash::Export {
                    format: "html".into(),
                    path: None,
                },
                Some(f @ ("html" | "md" | "markdown" | "jsonl")) => Slash::Export {
                    format: if f == "markdown" {
                        "md".into()
                    } else {
                        f.into()
                    },
                    path: words.next().map(str::to_owned),
                },
                Some(path) => Slash::Export {
                    format: format_of(path).into(),
                    path: Some(path.to_owned()),
                },
            }
        }
        "copy" => Slash::Copy,
        "reload" => Slash::Reload,
        "hotkeys" => Slash::Hotkeys,
        "ps" => Slash::Ps,
        _ => match name.strip_prefix("skill:") {
            Some("") => {
                Slash::Usage("name the skill: /skill:NAME [TEXT] (Tab completes names)".into())
            }
            Some(skill) => Slash::Skill {
                name: skill.to_owned(),
                text: args.to_owned(),
            },
            None => Slash::Unknown(name.to_owned()),
        },
    })
}

/// Whether `name` (without its `/`) is one of the chat's commands.
fn is_command(name: &str) -> bool {
    name.starts_with("skill:")
        || COMMANDS
            .iter()
            .any(|(command, _)| command.strip_prefix('/') == Some(name))
}

/// The export format a path's extension implies (HTML otherwise).
fn format_of(path: &str) -> &'static str {
    etch_runtime::transcript::format_of(std::path::Path::new(path)).unwrap_or("html")
}

/// The `/help` text.
pub fn help() -> String {
    let width = COMMANDS.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut text = String::from("Commands:\n");
    for (command, what) in COMMANDS {
        let _ = writeln!(text, "  {command:<width$}  {what}");
    }
    text.push_str("Keys: /hotkeys");
    text
}

/// The `/hotkeys` text.
pub fn hotkeys() -> String {
    let width = HOTKEYS.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut text = String::from("Keys:\n");
    for (key, what) in HOTKEYS {
        let _ = writeln!(text, "  {key:<width$}  {what}");
    }
    text.trim_end().to_owned()
}

/// Command names starting with `prefix` (for Tab completion).
pub fn complete(prefix: &str) -> Vec<&'static str> {
    COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| c.starts_with('/') && c.starts_with(prefix) && *c != "/skill:NAME")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("/help"), Some(Slash::Help));
        assert_eq!(parse("  /exit "), Some(Slash::Quit));
        assert_eq!(
            parse("/compact keep the API notes"),
            Some(Slash::Compact(Some("keep the API notes".into())))
        );
        assert_eq!(
            parse("/context dump /tmp/x.txt"),
            Some(Slash::ContextDump(Some("/tmp/x.txt".into())))
        );
        assert_eq!(parse("/context"), Some(Slash::Context));
        assert_eq!(
            parse("/export"),
            Some(Slash::Export {
                format: "html".into(),
                path: None
            })
        );
        assert_eq!(
            parse("/export md out.md"),
            Some(Slash::Export {
                format: "md".into(),
                path: Some("out.md".into())
            })
        );
        assert_eq!(
            parse("/export t.jsonl"),
            Some(Slash::Export {
                format: "jsonl".into(),
                path: Some("t.jsonl".into())
            })
        );
        assert_eq!(
            parse("/skill:review look at src"),
            Some(Slash::Skill {
                name: "review".into(),
                text: "look at src".into()
            })
        );
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("/usr/lib/libfoo.so is missing"), None);
    }

    /// C28: an unknown command is named back; misuse says what to type.
    #[test]
    fn unknown_and_misused_commands() {
        assert_eq!(parse("/nope"), Some(Slash::Unknown("nope".into())));
        assert!(matches!(parse("/name"), Some(Slash::Usage(_))));
        assert!(matches!(parse("/context foo"), Some(Slash::Usage(_))));
        assert!(matches!(parse("/skill:"), Some(Slash::Usage(_))));
    }

    #[test]
    fn completion_and_help() {
        assert_eq!(complete("/co"), ["/compact", "/context", "/copy"]);
        assert!(help().contains("/context dump") || help().contains("/context"));
        assert!(hotkeys().contains("Ctrl+D"));
    }
}
