//! The [`Secret`] wrapper that keeps tokens and keys out of Debug output.
//!
//! This module owns only redaction; it must not know where secrets come from or
//! where they are sent.

use std::fmt;

/// A token or API key. Its `Debug` and `Display` print `<redacted>` so that a
/// credential can never leak through logs, error messages or `{:?}` dumps
/// (E-AUTH-10); the value is reachable only through [`Secret::expose`], which
/// makes every use greppable.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value, for the one place that must send it (an HTTP header or
    /// the credential file).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty; an empty key counts as absent.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    /// Wraps an owned string without copying it.
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    /// Wraps a borrowed string.
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    /// Never prints the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    /// Never prints the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    /// A secret formatted any way must not reveal its value.
    #[test]
    fn debug_and_display_redact() {
        let s = Secret::new("sk-very-secret");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(format!("{s}"), "<redacted>");
        assert_eq!(s.expose(), "sk-very-secret");
    }
}
