//! The second line of defence for credentials (E-TOOL-22, E-AUTH-10): the
//! secret values etch knows are replaced by [`REDACTED`] in every tool
//! result (its text, its details and its progress) before the loop logs,
//! shows or sends it, whatever tool produced it: a built-in, `bash`, a
//! plugin or an MCP server. The built-ins already refuse etch's credential
//! store; this catches what they cannot see (`bash` printing a key file).
//!
//! The secrets are asked for again for every batch, so a token refreshed
//! during a run is redacted from the next batch on. Values shorter than
//! [`MIN_SECRET_LEN`] are left alone: they would match ordinary text.
//! This module must not know where the secrets come from (the runtime
//! reads them from `etch-auth`'s store and the environment).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted: etch credential]";

/// Shortest value treated as a secret.
pub const MIN_SECRET_LEN: usize = 8;

/// Where the secrets come from, asked once per batch.
type Source = dyn Fn() -> Vec<String> + Send + Sync;

/// The secrets to redact from tool results, or where to get them.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Hands out the current secrets; `None` redacts nothing.
    source: Option<Arc<Source>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("source", &self.source.is_some())
            .finish()
    }
}

impl Redactor {
    /// Redacts exactly `secrets`.
    pub fn new(secrets: Vec<String>) -> Self {
        Self::from_source(move || secrets.clone())
    }

    /// Redacts what `source` returns, asked again for every batch (the
    /// stored login can be refreshed during a run).
    pub fn from_source(source: impl Fn() -> Vec<String> + Send + Sync + 'static) -> Self {
        Self {
            source: Some(Arc::new(source)),
        }
    }

    /// The secrets as they are now.
    pub fn secrets(&self) -> Secrets {
        let Some(source) = &self.source else {
            return Secrets::default();
        };
        let mut secrets: Vec<String> = source()
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        // Longest first, so a secret holding another is replaced whole.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Secrets(secrets.into())
    }
}

/// A snapshot of the secrets, longest first; `Debug` never shows them.
#[derive(Clone, Default)]
pub struct Secrets(Arc<[String]>);

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} values)", self.0.len())
    }
}

impl Secrets {
    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when
    /// none occurs.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in self.0.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }

    /// Redacts `text` in place.
    pub fn redact_string(&self, text: &mut String) {
        if let Cow::Owned(redacted) = self.redact(text) {
            *text = redacted;
        }
    }

    /// Redacts every string in `value` (keys included), in place.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => self.redact_string(text),
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                if map.keys().any(|k| self.redact(k) != k.as_str()) {
                    let entries = std::mem::take(map);
                    for (key, v) in entries {
                        map.insert(self.redact(&key).into_owned(), v);
                    }
                }
                map.values_mut().for_each(|v| self.redact_value(v));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every occurrence is replaced, the longer secret first; short values
    /// are not secrets; text without any is borrowed.
    #[test]
    fn replaces_every_occurrence() {
        let secrets = Redactor::new(vec![
            "sk-abcdefgh".into(),
            "sk-abcdefgh-longer".into(),
            "short".into(),
        ])
        .secrets();
        assert_eq!(
            secrets.redact("a sk-abcdefgh-longer b sk-abcdefgh c short"),
            format!("a {REDACTED} b {REDACTED} c short")
        );
        assert!(matches!(secrets.redact("nothing"), Cow::Borrowed(_)));
        assert!(Redactor::default().secrets().is_empty());
        assert_eq!(format!("{secrets:?}"), "Secrets(2 values)");
    }

    /// Details are redacted in every string, keys too.
    #[test]
    fn redacts_values() {
        let secrets = Redactor::new(vec!["tok-12345678".into()]).secrets();
        let mut value = json!({"a": ["x tok-12345678", 1], "tok-12345678": {"b": "tok-12345678"}});
        secrets.redact_value(&mut value);
        assert_eq!(
            value,
            json!({"a": [format!("x {REDACTED}"), 1], REDACTED: {"b": REDACTED}})
        );
    }

    /// The source is asked again for each snapshot.
    #[test]
    fn source_is_asked_each_time() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let redactor = Redactor::from_source(move || {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            vec![format!("secret-value-{n}")]
        });
        assert_eq!(redactor.secrets().redact("secret-value-0"), REDACTED);
        assert_eq!(redactor.secrets().redact("secret-value-1"), REDACTED);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
