//! Hook matchers (E-HOOK-05, G7 in docs/requirements.md): a regular
//! expression that must match the whole subject (compiled as
//! `^(?:matcher)$`, so `bash|write` does not match `my_bash`); an empty
//! matcher or `*` matches everything. This module must not know what the
//! subject is.

use regex::Regex;

use crate::error::HookError;

/// A compiled matcher.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// The text as configured.
    text: String,
    /// The anchored expression; `None` matches everything.
    regex: Option<Regex>,
}

impl Matcher {
    /// Compiles `text`.
    pub fn new(text: &str) -> Result<Self, HookError> {
        let trimmed = text.trim();
        let regex = if trimmed.is_empty() || trimmed == "*" {
            None
        } else {
            Some(
                Regex::new(&format!("^(?:{trimmed})$")).map_err(|e| HookError::Matcher {
                    matcher: text.to_owned(),
                    reason: e.to_string(),
                })?,
            )
        };
        Ok(Self {
            text: text.to_owned(),
            regex,
        })
    }

    /// Whether `subject` matches.
    pub fn matches(&self, subject: &str) -> bool {
        self.regex.as_ref().is_none_or(|r| r.is_match(subject))
    }

    /// The matcher as configured.
    pub fn text(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_are_anchored() {
        let m = Matcher::new("bash|write|edit").unwrap();
        assert!(m.matches("bash") && m.matches("edit"));
        assert!(!m.matches("my_bash") && !m.matches("bash2"));
        assert!(Matcher::new("").unwrap().matches("anything"));
        assert!(Matcher::new("*").unwrap().matches("anything"));
        assert!(Matcher::new("mcp__.*").unwrap().matches("mcp__git__log"));
        let err = Matcher::new("(").unwrap_err().to_string();
        assert!(err.contains("matcher `(`"), "{err}");
    }
}
