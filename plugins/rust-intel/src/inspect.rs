//! One `rust_inspect` query from paths to text: walk the paths, keep the
//! files the `file` filter passes, read and parse them (counting and
//! naming the ones that fail), then hand the inventory to the renderer.

use std::path::Path;

use etch_plugin_sdk::ToolError;

use crate::filter::{Detail, Filters};
use crate::parse::{Parsed, parse_source};
use crate::render;
use crate::walk::{SourceFile, walk};

/// Files larger than this are skipped (and named) rather than parsed.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// How many file labels the inventory keeps as samples.
const SAMPLE_FILES: usize = 6;

/// What one call asks.
#[derive(Debug, Clone)]
pub struct Query {
    /// Files or directories, relative to the working directory.
    pub paths: Vec<String>,
    /// The filters.
    pub filters: Filters,
    /// How much to show.
    pub detail: Detail,
}

/// One file that parsed.
#[derive(Debug)]
pub struct ParsedFile {
    /// The file and its names.
    pub file: SourceFile,
    /// Its items and modules.
    pub parsed: Parsed,
    /// Its text, kept only when `detail` is `full`.
    pub text: Option<String>,
}

/// Everything a query found, before filtering items.
#[derive(Debug, Default)]
pub struct Inventory {
    /// The working directory the paths were relative to.
    pub base: String,
    /// The `.rs` files the walk found.
    pub found: usize,
    /// Labels of the first few files found (before the `file` filter).
    pub sample_files: Vec<String>,
    /// The files that parsed (those the `file` filter passed).
    pub files: Vec<ParsedFile>,
    /// Files the `file` filter passed that were skipped, with why.
    pub failures: Vec<(String, String)>,
    /// Whether the walk stopped at its file limit.
    pub truncated: bool,
}

impl Inventory {
    /// How many files the `file` filter passed.
    pub fn file_matched(&self) -> usize {
        self.files.len() + self.failures.len()
    }

    /// How many items the parsed files hold.
    pub fn item_count(&self) -> usize {
        self.files.iter().map(|f| f.parsed.items.len()).sum()
    }

    /// The crate names of the parsed files, in first-seen order.
    pub fn crates(&self) -> Vec<&str> {
        let mut crates: Vec<&str> = Vec::new();
        for f in &self.files {
            if !crates.contains(&f.file.krate.as_str()) {
                crates.push(&f.file.krate);
            }
        }
        crates
    }
}

/// Answers `query` for the working directory `base`.
pub fn inspect(base: &Path, query: &Query) -> Result<String, ToolError> {
    Ok(render::render(&gather(base, query)?, query))
}

/// Walks, filters by file and parses.
pub fn gather(base: &Path, query: &Query) -> Result<Inventory, ToolError> {
    let walked = walk(base, &query.paths)?;
    let mut inventory = Inventory {
        base: base.display().to_string(),
        found: walked.files.len(),
        truncated: walked.truncated,
        ..Inventory::default()
    };
    for file in walked.files {
        if inventory.sample_files.len() < SAMPLE_FILES {
            inventory.sample_files.push(file.label.clone());
        }
        if !query
            .filters
            .file_matches(&[&file.label, &file.under_root, &file.raw])
        {
            continue;
        }
        let size = std::fs::metadata(&file.path).map_or(0, |m| m.len());
        if size > MAX_FILE_BYTES {
            let why = format!("{size} bytes, over the {MAX_FILE_BYTES}-byte limit");
            inventory.failures.push((file.label, why));
            continue;
        }
        let text = match std::fs::read_to_string(&file.path) {
            Ok(text) => text,
            Err(err) => {
                inventory.failures.push((file.label, err.to_string()));
                continue;
            }
        };
        match parse_source(&text, &file.module) {
            Ok(parsed) => inventory.files.push(ParsedFile {
                file,
                parsed,
                text: (query.detail == Detail::Full).then_some(text),
            }),
            Err(err) => {
                let why = format!("{}:{}: {}", err.line, err.column, err.message);
                inventory.failures.push((file.label, why));
            }
        }
    }
    Ok(inventory)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::fixture::{self, query};

    #[test]
    fn gather_parses_what_the_file_filter_passes_and_names_failures() {
        let dir = fixture::crate_dir();
        let all = gather(dir.path(), &query(&["."], [None; 3], Detail::Summary)).unwrap();
        assert_eq!(all.found, 6);
        assert_eq!(all.files.len(), 5);
        assert_eq!(all.failures.len(), 1);
        assert_eq!(all.failures[0].0, "demo/src/bad.rs");
        assert!(all.failures[0].1.starts_with("2:8: "), "{:?}", all.failures);
        assert!(all.files.iter().all(|f| f.text.is_none()));
        assert_eq!(all.crates().len(), 2);
        assert_eq!(all.crates()[0], "demo_crate");

        let util = gather(
            dir.path(),
            &query(&["demo"], [None, Some("^util/"), None], Detail::Full),
        )
        .unwrap();
        // Only the root-relative spelling `src/util/..` does not match
        // `^util/`; nothing else does either.
        assert_eq!(util.file_matched(), 0);
        let util = gather(
            dir.path(),
            &query(&["demo/src"], [None, Some("^util/"), None], Detail::Full),
        )
        .unwrap();
        assert_eq!(util.file_matched(), 2);
        assert!(util.files.iter().all(|f| f.text.is_some()));
        assert_eq!(util.item_count(), 3);
    }
}
