//! What can be wrong with a config file, as typed errors.
//!
//! This module owns the wording of every finding: each says what is wrong
//! and what is allowed instead. It must not know files, lines or severities;
//! the parser wraps a [`Problem`] into a [`Diagnostic`](crate::Diagnostic).

use std::io;

/// One thing wrong with a config file or one of its values.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Problem {
    /// The file exists but cannot be read.
    #[error("cannot read the config file: {0}")]
    Unreadable(#[source] io::Error),
    /// The file is not valid TOML; its values are not used.
    #[error("invalid TOML: {message} (column {column}); nothing from this file is used")]
    Syntax {
        /// The parser's message.
        message: String,
        /// 1-based column of the error.
        column: usize,
    },
    /// A value has the wrong TOML type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What the schema wants, with its article.
        expected: &'static str,
        /// What the file has, with its article.
        found: String,
    },
    /// A string outside the key's fixed set.
    #[error("{value:?} is not allowed; expected one of: {allowed}")]
    NotAllowed {
        /// The value as written.
        value: String,
        /// The allowed values, comma-separated.
        allowed: String,
    },
    /// A number outside the key's range (or too large for TOML's i64, or
    /// not finite).
    #[error("{value} is out of range; expected {range}")]
    OutOfRange {
        /// The integer as written.
        value: String,
        /// The range in words, e.g. "an integer >= 1".
        range: String,
    },
    /// A hook matcher that the `regex` crate rejects.
    #[error(
        "{matcher:?} is not a valid regex: {detail}; an empty matcher or \"*\" matches everything"
    )]
    BadRegex {
        /// The matcher as written.
        matcher: String,
        /// The regex crate's explanation, flattened to one line.
        detail: String,
    },
    /// A string holding a control character or a direction override:
    /// in a command it could make what `etch trust` shows differ from
    /// what runs, and no setting needs one.
    #[error(
        "{value:?} contains a control character ({shown}); etch refuses them in configuration values (only tabs{newlines} are allowed), so that what is shown is what runs"
    )]
    ControlCharacter {
        /// The value as written.
        value: String,
        /// The first offending character, made visible.
        shown: String,
        /// ", newlines" where the key takes text, else empty.
        newlines: &'static str,
    },
    /// A key the table does not have.
    #[error("unknown key `{key}` in [{table}]{hint}; valid keys: {valid}")]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The table it appears in.
        table: String,
        /// "; did you mean `x`?" or empty.
        hint: String,
        /// The table's keys, comma-separated.
        valid: String,
    },
    /// A table (or top-level key) the schema does not have.
    #[error("unknown table `{name}`{hint}; valid tables: {valid}")]
    UnknownTable {
        /// The dotted name as written.
        name: String,
        /// "; did you mean `x`?" or empty.
        hint: String,
        /// The tables valid at that place, comma-separated.
        valid: String,
    },
    /// A `[[hooks.<Event>]]` whose event is not one of E-HOOK-03.
    #[error("unknown hook event `{event}`{hint}; expected one of: {valid}")]
    UnknownHookEvent {
        /// The event as written.
        event: String,
        /// "; did you mean `x`?" or empty.
        hint: String,
        /// The hook events, comma-separated.
        valid: String,
    },
    /// A credential-looking key (E-CFG-04).
    #[error(
        "`{key}` looks like a credential; etch never reads credentials from config files, pass them with a flag (e.g. --api-key) or an environment variable (e.g. OPENAI_API_KEY) instead"
    )]
    Credential {
        /// The key as written.
        key: String,
    },
    /// An array-table entry without a key it must have.
    #[error("{what} needs a non-empty `{key}`{unless}")]
    Missing {
        /// `every [[plugins]] entry` or `an enabled [[hooks.PreToolUse]] entry`.
        what: String,
        /// The missing key.
        key: &'static str,
        /// How to keep the entry anyway, or empty.
        unless: &'static str,
    },
    /// An MCP server name outside `^[A-Za-z0-9_-]{1,32}$`, or holding
    /// `__` (E-CFG-23).
    #[error(
        "{name:?} is not a valid server name; use 1 to 32 ASCII letters, digits, `_` or `-` (^[A-Za-z0-9_-]{{1,32}}$) without `__`, as it becomes part of tool names (mcp__<name>__<tool>)"
    )]
    BadServerName {
        /// The name as written.
        name: String,
    },
    /// A subagent profile name outside `^[A-Za-z0-9_-]{1,32}$` (E-CFG-14).
    #[error(
        "{name:?} is not a valid profile name; use 1 to 32 ASCII letters, digits, `_` or `-` (^[A-Za-z0-9_-]{{1,32}}$), as it appears in the task tool's schema and in codenames"
    )]
    BadProfileName {
        /// The name as written.
        name: String,
    },
    /// A URL that is not `http://` or `https://`. The value is not echoed:
    /// a URL may carry a token.
    #[error("the URL must start with http:// or https:// (a Streamable HTTP endpoint)")]
    BadUrlScheme,
    /// A header item that is not `Name: value`. The item is not echoed: it
    /// may hold a secret.
    #[error(
        "item {item} is not \"Name: value\": a non-empty name of letters, digits and !#$%&'*+-.^_`|~, a colon, then a value on one line"
    )]
    BadHeader {
        /// 1-based position in the array.
        item: usize,
    },
    /// A credential header (`Authorization`, `X-Api-Key`, …) with a literal
    /// value (E-CFG-04). The value is never echoed.
    #[error(
        "the {name} header (item {item}) puts a secret in the config file; use bearer_token_env = \"VAR\" or a ${{VAR}} reference"
    )]
    SecretHeader {
        /// The header name as written.
        name: String,
        /// 1-based position in the array.
        item: usize,
    },
    /// A string that must name an environment variable and does not.
    #[error(
        "{name:?} is not an environment variable name; use ASCII letters, digits and `_`, not starting with a digit (^[A-Za-z_][A-Za-z0-9_]*$)"
    )]
    BadEnvName {
        /// The value as written.
        name: String,
    },
    /// An enabled `[[mcp.servers]]` entry with neither `command` nor `url`.
    #[error(
        "an enabled [[{table}]] entry needs command (a stdio server) or url (an HTTP server); set disabled = true to keep the entry switched off"
    )]
    NoTransport {
        /// The table as written (`mcp.servers`).
        table: String,
    },
    /// An enabled `[[mcp.servers]]` entry with both `command` and `url`.
    #[error(
        "this [[{table}]] entry has both command and url; keep command for a stdio server or url for an HTTP server"
    )]
    BothTransports {
        /// The table as written (`mcp.servers`).
        table: String,
    },
    /// A key of one kind of MCP server on an entry of the other kind.
    #[error(
        "{key} applies to {applies} servers and this entry sets {other}; remove {key}, or use {applies} instead of {other}"
    )]
    WrongTransport {
        /// The misplaced key.
        key: &'static str,
        /// The key the misplaced one belongs with: `command` or `url`.
        applies: &'static str,
        /// The key the entry sets instead.
        other: &'static str,
    },
    /// A `[[subagents.profile]]` whose `allowed_tools` lists `task`: the
    /// first subagent release has no nested delegation (C38, E-SUB-11).
    #[error(
        "`task` cannot be given to a subagent: nested delegation comes later (C38); remove it from allowed_tools"
    )]
    NestedTask,
    /// A scalar where a `[table]` belongs.
    #[error("expected a table ([{table}]), found {found}")]
    ExpectedTable {
        /// The table's dotted name.
        table: String,
        /// What the file has, with its article.
        found: String,
    },
    /// Something other than `[[table]]` entries where they belong.
    #[error("expected an array of tables ([[{table}]]), found {found}")]
    ExpectedArrayOfTables {
        /// The table's dotted name.
        table: String,
        /// What the file has, with its article.
        found: String,
    },
}

/// "; did you mean `x`?" for a close candidate, else nothing.
pub(crate) fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    crate::suggest::closest(word, candidates)
        .map(|candidate| format!("; did you mean `{candidate}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The allowed-set message quotes the value and lists the choices.
    #[test]
    fn words_not_allowed() {
        let problem = Problem::NotAllowed {
            value: "chats".into(),
            allowed: "chat, responses".into(),
        };
        assert_eq!(
            problem.to_string(),
            "\"chats\" is not allowed; expected one of: chat, responses"
        );
    }

    /// Suggestions appear only for near misses.
    #[test]
    fn suggests_near_misses() {
        assert_eq!(
            did_you_mean("apii", &["api", "base_url"]),
            "; did you mean `api`?"
        );
        assert_eq!(did_you_mean("zzzzzz", &["api"]), "");
    }
}
