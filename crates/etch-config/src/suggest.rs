//! "Did you mean" suggestions for misspelled table, key and event names.
//!
//! This module owns the edit-distance rule only; it must not know the schema
//! or how messages are worded.

/// The candidate closest to `word`, when it is close enough to be a typo:
/// at most one edit for short names, a third of the length for longer ones;
/// failing that, a candidate that `word` (three characters or more) starts,
/// such as `timeout` for `timeout_seconds`.
pub(crate) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|candidate| (distance(&word, &candidate.to_lowercase()), *candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
        .or_else(|| {
            candidates
                .iter()
                .find(|candidate| word.len() >= 3 && candidate.to_lowercase().starts_with(&word))
                .copied()
        })
}

/// Levenshtein distance in characters, with one row of memory.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Typos find their key; unrelated words find nothing.
    #[test]
    fn suggests_only_close_names() {
        let keys = ["api", "base_url", "reasoning_effort"];
        assert_eq!(closest("apii", &keys), Some("api"));
        assert_eq!(closest("base_ulr", &keys), Some("base_url"));
        assert_eq!(closest("reasoning_efort", &keys), Some("reasoning_effort"));
        assert_eq!(closest("colour", &keys), None);
        assert_eq!(closest("reasoning", &keys), Some("reasoning_effort"));
        assert_eq!(closest("re", &keys), None);
        assert_eq!(closest("pretooluse", &["PreToolUse"]), Some("PreToolUse"));
    }

    /// The distance counts insertions, deletions and substitutions.
    #[test]
    fn computes_levenshtein() {
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("same", "same"), 0);
    }
}
