//! Merges file layers in precedence order (E-CFG-02, E-CFG-03): a later
//! layer's scalar overrides an earlier one and records its file as the
//! provenance; array-table entries append, earlier layers first.
//!
//! This module owns the merge rule only. It must not read files or know the
//! typed config.

use std::collections::BTreeMap;

use crate::parse::{Entry, Layer};
use crate::provenance::Source;
use crate::value::Value;

/// The merged values of every layer applied so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Merged {
    /// Plain-table values by dotted `table.key`.
    pub scalars: BTreeMap<String, Value>,
    /// Which file set each value in `scalars`.
    pub sources: BTreeMap<String, Source>,
    /// Array-table entries: earlier layers first, then source order.
    pub entries: Vec<Entry>,
}

impl Merged {
    /// Applies `layer` over everything merged so far.
    pub(crate) fn apply(&mut self, layer: Layer) {
        for (key, value) in layer.scalars {
            self.sources
                .insert(key.clone(), Source::File(layer.path.clone()));
            self.scalars.insert(key, value);
        }
        self.entries.extend(layer.entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::test_layer as layer;

    /// The later scalar wins and names its file; untouched keys keep theirs.
    #[test]
    fn later_scalars_override() {
        let mut merged = Merged::default();
        merged.apply(layer(
            "/u",
            "[openai]\napi = \"chat\"\ntransport = \"auto\"\n",
        ));
        merged.apply(layer("/p", "[openai]\napi = \"responses\"\n"));
        assert_eq!(
            merged.scalars["openai.api"],
            Value::String("responses".into())
        );
        assert_eq!(merged.sources["openai.api"], Source::File("/p".into()));
        assert_eq!(
            merged.sources["openai.transport"],
            Source::File("/u".into())
        );
    }

    /// Entries append, earlier layers first.
    #[test]
    fn entries_append_in_layer_order() {
        let mut merged = Merged::default();
        merged.apply(layer("/u", "[[plugins]]\nname = \"a\"\ncommand = \"x\"\n"));
        merged.apply(layer("/p", "[[plugins]]\nname = \"b\"\ncommand = \"y\"\n"));
        let names: Vec<_> = merged
            .entries
            .iter()
            .map(|entry| entry.values["name"].clone())
            .collect();
        assert_eq!(
            names,
            [Value::String("a".into()), Value::String("b".into())]
        );
    }
}
