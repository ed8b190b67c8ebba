//! The user's prompt for a headless run: the `-p` text and positional
//! words, plus piped stdin as a fenced block (C40), and the title the
//! session index shows for it.
//!
//! Piped input is checked before anything is sent: binary data (a NUL byte,
//! or bytes that are not UTF-8) is refused, and so is text too large for
//! the context etch keeps (`[context] auto_compact_threshold_tokens`):
//! sending 20 MB with every request only fails later, slowly and at a cost.
//! This module must not know how the prompt is run.

use std::io::{IsTerminal, Read};

use crate::exit::{self, Failure};

/// How many leading bytes are looked at for a NUL (as grep does).
const BINARY_PROBE_BYTES: usize = 8192;

/// A prompt ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// What the model receives.
    pub text: String,
    /// What the session index shows: the user's own words (not a piped
    /// fence or a skill block), else the first line of the piped input.
    pub title: String,
}

/// Builds the prompt from `typed` text and the process's stdin when it is
/// piped; `max_tokens` bounds the piped part. Errors when there is neither.
///
/// Stdin is read only up to a byte bound derived from `max_tokens`, so an
/// endless producer (`yes | etch -p x`) is refused instead of filling
/// memory.
pub fn read(typed: Option<String>, max_tokens: u64) -> Result<Prompt, Failure> {
    let stdin = std::io::stdin();
    let piped = if stdin.is_terminal() {
        Vec::new()
    } else {
        let limit = byte_limit(max_tokens);
        let mut bytes = Vec::new();
        stdin
            .lock()
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| {
                Failure::new(exit::FAILED, anyhow::anyhow!("could not read stdin: {e}"))
            })?;
        if bytes.len() as u64 > limit {
            return Err(Failure::usage(format!(
                "piped input is too large: more than {limit} bytes, beyond the ~{max_tokens} tokens \
                 of context etch keeps ([context] auto_compact_threshold_tokens); pipe only the part \
                 that matters (head, tail, grep) or save it to a file and ask etch to read it"
            )));
        }
        bytes
    };
    build(typed.unwrap_or_default(), &piped, max_tokens)
}

/// The most stdin bytes read for a token bound: sixteen bytes a token
/// (the estimator counts whitespace as nothing, so text can be sparse) and
/// at least 1 MiB.
fn byte_limit(max_tokens: u64) -> u64 {
    max_tokens.saturating_mul(16).max(1 << 20)
}

/// [`read`] without the process: `typed` text and `piped` bytes.
pub fn build(typed: String, piped: &[u8], max_tokens: u64) -> Result<Prompt, Failure> {
    let piped = checked_text(piped, max_tokens)?;
    if piped.trim().is_empty() {
        if typed.trim().is_empty() {
            return Err(Failure::usage(
                "no prompt given: use etch -p \"question\" (or pipe input into etch); see etch --help",
            ));
        }
        return Ok(Prompt {
            title: typed.clone(),
            text: typed,
        });
    }
    let block = fenced(&piped);
    if typed.trim().is_empty() {
        let first = piped.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Ok(Prompt {
            title: first.to_owned(),
            text: block,
        });
    }
    Ok(Prompt {
        text: format!("{typed}\n\n{block}"),
        title: typed,
    })
}

/// The piped bytes as text, or why they cannot be sent.
fn checked_text(piped: &[u8], max_tokens: u64) -> Result<String, Failure> {
    let probe = &piped[..piped.len().min(BINARY_PROBE_BYTES)];
    if let Some(at) = probe.iter().position(|&b| b == 0) {
        return Err(Failure::usage(format!(
            "piped input looks binary (a NUL byte at offset {at} of {} bytes); etch sends text only: \
             pipe a text form of it (e.g. through strings or xxd) or name the file in the prompt",
            piped.len()
        )));
    }
    let text = std::str::from_utf8(piped).map_err(|e| {
        Failure::usage(format!(
            "piped input is not UTF-8 text (invalid bytes at offset {} of {}); convert it \
             (e.g. iconv -f latin1 -t utf-8) or name the file in the prompt",
            e.valid_up_to(),
            piped.len()
        ))
    })?;
    let tokens = etch_prompt::estimate::tokens(text);
    if tokens > max_tokens {
        #[allow(clippy::cast_precision_loss)]
        let megabytes = piped.len() as f64 / 1_000_000.0;
        return Err(Failure::usage(format!(
            "piped input is too large: {} bytes ({megabytes:.1} MB, ~{tokens} tokens), more than the \
             ~{max_tokens} tokens of context etch keeps ([context] auto_compact_threshold_tokens); \
             pipe only the part that matters (head, tail, grep) or save it to a file and ask etch \
             to read it",
            piped.len()
        )));
    }
    Ok(text.to_owned())
}

/// Wraps text in a code fence longer than any backtick run inside it.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{fence}\n{body}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C40: the fence is longer than any backtick run in the piped text.
    #[test]
    fn fences_outgrow_inner_backticks() {
        assert_eq!(fenced("a\n"), "```\na\n```");
        assert_eq!(fenced("x ```` y"), "`````\nx ```` y\n`````");
    }

    /// The title is the user's words; piped input alone titles the session
    /// with its first line, not the fence.
    #[test]
    fn titles_are_the_users_words() {
        let p = build("fix this".into(), b"error: boom\n", 1000).unwrap();
        assert_eq!(p.title, "fix this");
        assert_eq!(p.text, "fix this\n\n```\nerror: boom\n```");
        let p = build(String::new(), b"\n\nerror: boom\nmore\n", 1000).unwrap();
        assert_eq!(p.title, "error: boom");
        assert!(p.text.starts_with("```\n"));
        assert_eq!(build(String::new(), b"", 10).unwrap_err().code, exit::USAGE);
    }

    /// Binary, non-UTF-8 and oversized stdin are refused with what was
    /// wrong and what to do.
    #[test]
    fn bad_stdin_is_refused() {
        let describe = |f: Failure| f.error.map(|e| e.to_string()).unwrap_or_default();
        let err = build("x".into(), b"abc\0def", 1000).unwrap_err();
        assert_eq!(err.code, exit::USAGE);
        assert!(describe(err).contains("NUL byte at offset 3"));
        let err = build("x".into(), b"caf\xe9\n", 1000).unwrap_err();
        assert!(describe(err).contains("not UTF-8"));
        let big = "word ".repeat(10_000);
        let err = build("x".into(), big.as_bytes(), 1000).unwrap_err();
        let text = describe(err);
        assert!(
            text.contains("50000 bytes") && text.contains("too large"),
            "{text}"
        );
        assert!(build("x".into(), big.as_bytes(), 1_000_000).is_ok());
    }
}
