//! Byte offsets to 1-based lines and columns.
//!
//! The TOML parser reports spans as byte ranges; diagnostics speak in lines
//! (and syntax errors also in columns). This module owns only that
//! conversion and must not know TOML or the schema.

/// The start offset of every line of one text, for fast lookups.
pub(crate) struct LineIndex<'a> {
    /// The text, needed to count characters for columns.
    text: &'a str,
    /// Byte offset where each line starts; the first is always 0.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `text` once, so each lookup is a binary search.
    pub(crate) fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        Self { text, starts }
    }

    /// The 1-based line holding byte `offset` (the last line past the end).
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset).max(1)
    }

    /// The 1-based column, in characters, of byte `offset`.
    pub(crate) fn column(&self, offset: usize) -> usize {
        let start = self.starts[self.line(offset) - 1];
        let end = offset.min(self.text.len());
        self.text
            .get(start..end)
            .map_or(1, |prefix| prefix.chars().count() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    /// Offsets at line starts, inside lines and past the end map as editors do.
    #[test]
    fn maps_offsets_to_lines_and_columns() {
        let index = LineIndex::new("a = 1\nbé = 2\n\nc");
        assert_eq!(index.line(0), 1);
        assert_eq!(index.line(5), 1);
        assert_eq!(index.line(6), 2);
        assert_eq!(index.column(6), 1);
        assert_eq!(index.column(9), 3, "é is one column");
        assert_eq!(index.line(14), 3);
        assert_eq!(index.line(15), 4);
        assert_eq!(index.line(99), 4);
    }
}
