//! Diagnostics: one finding about one config file, with where and what.
//!
//! This module owns the diagnostic shape and its one-line rendering
//! (`{path}:{line}: {key}: {message}`). It must not know how findings are
//! made (that is `parse` and `validate`) or how the CLI prints severities.

use std::fmt;
use std::path::PathBuf;

/// How serious a finding is. Unknown tables and keys are warnings at runtime
/// and errors in `config check` (E-CFG-20; see [`Loaded::strict`](crate::Loaded::strict));
/// everything else is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The configuration is not usable as written; `config check` exits 1.
    Error,
    /// Worth telling the user, but etch can run.
    Warning,
}

impl fmt::Display for Severity {
    /// `error` or `warning`, the usual prefixes of a CLI diagnostic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Error => "error",
            Self::Warning => "warning",
        })
    }
}

/// One finding in one config file (E-CFG-17: it names the file and the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The config file the finding is about.
    pub path: PathBuf,
    /// 1-based line, when the finding has a place in the file.
    pub line: Option<usize>,
    /// Dotted `table.key` (`hooks.PreToolUse.matcher` for hook entries), when
    /// the finding is about a key or table.
    pub key: Option<String>,
    /// What is wrong and what is allowed instead.
    pub message: String,
}

impl Diagnostic {
    /// Whether this finding makes the configuration unusable.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    /// `{path}:{line}: {key}: {message}`, leaving out the parts that are absent,
    /// so editors and terminals can jump to the place.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diagnostic, so each test changes only what it checks.
    fn sample() -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            path: PathBuf::from("/p/.etch/config.toml"),
            line: Some(3),
            key: Some("openai.api".into()),
            message: "\"chats\" is not allowed; expected one of: chat, responses".into(),
        }
    }

    /// The full form matches the format the CLI documents.
    #[test]
    fn displays_every_part() {
        assert_eq!(
            sample().to_string(),
            "/p/.etch/config.toml:3: openai.api: \"chats\" is not allowed; expected one of: chat, responses"
        );
    }

    /// Absent line and key are left out, not printed as placeholders.
    #[test]
    fn omits_absent_parts() {
        let mut diagnostic = sample();
        diagnostic.line = None;
        diagnostic.key = None;
        diagnostic.message = "cannot read".into();
        assert_eq!(diagnostic.to_string(), "/p/.etch/config.toml: cannot read");
        assert!(diagnostic.is_error());
        assert_eq!(Severity::Warning.to_string(), "warning");
    }
}
