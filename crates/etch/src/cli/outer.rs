//! Options written outside a subcommand: run options typed before
//! `resume` or `compact` (as people do with git or cargo) brought to it,
//! and the prompt's words joined. It must not know what the options do.

use super::{Command, RunArgs};

/// Brings options written before a subcommand to it: run options for
/// `resume` and `compact` (people type global flags first, as with git or
/// cargo), `--json` for the commands that print JSON. Anything else the
/// subcommand has no use for is a usage error naming it, rather than being
/// silently ignored.
pub fn absorb_outer(
    command: Command,
    outer: &RunArgs,
    outer_words: &[String],
) -> Result<Command, crate::exit::Failure> {
    let name = command.name();
    let refuse = |flag: &str| {
        crate::exit::Failure::usage(format!(
            "etch {name} has no use for {flag}; see etch {name} --help"
        ))
    };
    if !outer_words.is_empty() {
        return Err(refuse("a prompt before the subcommand"));
    }
    let merge = |run: RunArgs| run.merged_with(outer).map_err(crate::exit::Failure::usage);
    let json_only = || match outer.given().into_iter().find(|f| *f != "--json") {
        Some(flag) => Err(refuse(flag)),
        None => Ok(outer.json),
    };
    Ok(match command {
        Command::Resume {
            last,
            prefix,
            words,
            run,
        } => Command::Resume {
            last,
            prefix,
            words,
            run: merge(run)?,
        },
        Command::Compact {
            session,
            focus,
            force,
            run,
        } => Command::Compact {
            session,
            focus,
            force,
            run: merge(run)?,
        },
        Command::Rpc { session, run } => Command::Rpc {
            session,
            run: merge(run)?,
        },
        Command::Acp { run } => Command::Acp { run: merge(run)? },
        Command::Serve {
            listen,
            nine_p,
            roots,
            insecure_remote,
            run,
        } => Command::Serve {
            listen,
            nine_p,
            roots,
            insecure_remote,
            run: merge(run)?,
        },
        Command::Chat {
            session,
            attach,
            run,
        } => Command::Chat {
            session,
            attach,
            run: merge(run)?,
        },
        Command::Sessions { json } => Command::Sessions {
            json: json | json_only()?,
        },
        Command::Show { json, tree, prefix } => Command::Show {
            json: json | json_only()?,
            tree,
            prefix,
        },
        Command::Status { session, json } => Command::Status {
            session,
            json: json | json_only()?,
        },
        Command::Context {
            action,
            session,
            json,
        } => Command::Context {
            action,
            session,
            json: json | json_only()?,
        },
        other => match outer.given().first() {
            Some(flag) => return Err(refuse(flag)),
            None => other,
        },
    })
}

/// The prompt of a run: the `-p` text and the positional words, joined
/// with spaces (`etch -p fix the parser` drops nothing).
pub fn joined_prompt(flag: Option<String>, words: &[String]) -> Option<String> {
    let mut parts: Vec<String> = flag.into_iter().collect();
    parts.extend(words.iter().cloned());
    (!parts.is_empty()).then(|| parts.join(" "))
}
