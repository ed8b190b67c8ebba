//! A one-word prompt that is really a mistyped subcommand (`etch
//! sesions`) or a chat command (`etch tree`): a usage error with the right
//! command, never a paid model turn. It must not know what the commands
//! do.

use super::Cli;

/// A one-word positional prompt that is a subcommand name with a typo
/// (`etch sesions`) is a usage error with a suggestion, as git and cargo
/// do: running it as a paid model turn is never what was meant. `-p`
/// sends any text as asked, and so does a word with piped input
/// (`cat a b | etch compare` is a prompt).
pub fn reject_mistyped_command(
    flag: Option<&str>,
    words: &[String],
) -> Result<(), crate::exit::Failure> {
    let [word] = words else {
        return Ok(());
    };
    if flag.is_some()
        || word.chars().any(char::is_whitespace)
        || !std::io::IsTerminal::is_terminal(&std::io::stdin()) && !stdin_is_null()
    {
        return Ok(());
    }
    if let Some(instead) = chat_command(word) {
        return Err(crate::exit::Failure::usage(format!(
            "`{word}` is a command of the chat (/{}); {instead} (to send \"{word}\" to the model, use etch -p {word})",
            word.trim_start_matches('/')
        )));
    }
    let command = <Cli as clap::CommandFactory>::command();
    let names = command.get_subcommands().map(|c| c.get_name().to_owned());
    match closest(word, names) {
        Some(name) => Err(crate::exit::Failure::usage(format!(
            "unknown command `{word}`; did you mean `{name}`? (to send \"{word}\" to the model, use etch -p {word})"
        ))),
        None => Ok(()),
    }
}

/// What to run instead when `word` (with or without its `/`) is one of
/// the chat's slash commands that is no command line subcommand: a bare
/// `etch tree` would otherwise become a prompt, a paid turn that can run
/// tools.
fn chat_command(word: &str) -> Option<&'static str> {
    let name = word.strip_prefix('/').unwrap_or(word).to_ascii_lowercase();
    let known = etch_chat::slash::COMMANDS
        .iter()
        .any(|(command, _)| command.strip_prefix('/') == Some(name.as_str()));
    if !known {
        return None;
    }
    Some(match name.as_str() {
        "help" => "see etch --help",
        "new" => "run etch for a new chat, or etch -p \"…\" for one prompt",
        "model" => "pass --model NAME (and --provider)",
        "thinking" => "pass --reasoning-effort LEVEL",
        "tree" => "see etch show --tree [PREFIX]",
        "fork" => "open the session with etch resume PREFIX and type /fork",
        "quit" | "exit" => "there is nothing to leave",
        _ => "type it in the chat (etch, or etch resume PREFIX)",
    })
}

/// Whether stdin is `/dev/null` (as when run from a script or a test with
/// no input): that is not piped input.
fn stdin_is_null() -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(stdin), Ok(null)) = (
        std::fs::metadata("/dev/stdin"),
        std::fs::metadata("/dev/null"),
    ) else {
        return false;
    };
    stdin.rdev() == null.rdev() && stdin.ino() == null.ino()
}

/// The name within a small edit distance of `word`, if any: one edit for
/// words of up to seven letters, two for longer ones, and the first letter
/// right (typos rarely hit it; `how` is not `show`, `rename` not
/// `resume`).
fn closest(word: &str, names: impl Iterator<Item = String>) -> Option<String> {
    let word = word.to_lowercase();
    let allowed = if word.chars().count() <= 7 { 1 } else { 2 };
    names
        .filter(|name| *name != word && name.chars().next() == word.chars().next())
        .map(|name| (edit_distance(&word, &name), name))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// Optimal string alignment distance: insertions, deletions, substitutions
/// and swaps of two neighbours (`stauts` is one edit from `status`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Typos of subcommands are caught; ordinary words are not.
    #[test]
    fn mistyped_subcommands_get_a_suggestion() {
        let names = || {
            ["sessions", "status", "show", "resume", "config"]
                .map(str::to_owned)
                .into_iter()
        };
        assert_eq!(closest("sesions", names()).as_deref(), Some("sessions"));
        assert_eq!(closest("stauts", names()).as_deref(), Some("status"));
        assert_eq!(closest("shwo", names()).as_deref(), Some("show"));
        assert_eq!(closest("Resme", names()).as_deref(), Some("resume"));
        assert_eq!(closest("hello", names()), None);
        assert_eq!(closest("explain", names()), None);
        assert_eq!(closest("sh", names()), None);
        for word in ["rename", "result", "resize", "how", "compare", "confirm"] {
            let names = [
                "sessions", "status", "show", "resume", "config", "compact", "context",
            ];
            assert_eq!(
                closest(word, names.map(str::to_owned).into_iter()),
                None,
                "{word}"
            );
        }
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("ab", "ba"), 1);
    }
}
