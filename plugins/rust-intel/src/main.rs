//! The `rust-intel` etch plugin: one read-only tool, `rust_inspect`, over
//! the Rust sources of a project, parsed with `syn` (no compiler or
//! rust-analyzer needed). It lists crates and modules (`detail:
//! package`), items as rows (`none`), items with signatures and docs
//! (`summary`, the default) or items with their numbered source
//! (`full`), filtered by case-insensitive regexes on the crate or module
//! path, the file and the item name.
//!
//! This file owns the tool's declaration and argument handling; the
//! work is in `walk` (files, crates, modules), `parse` and `shape`
//! (items and their text), `filter` (the query), `inspect` (the
//! pipeline) and `render` (the answer). Configure it with
//!
//! ```toml
//! # after: cargo install --locked --path plugins/rust-intel
//! [[plugins]]
//! name = "rust-intel"
//! command = "etch-rust-intel"
//! ```
//!
//! (or the built binary's path). It knows nothing of etch beyond the SDK.

mod filter;
#[cfg(test)]
mod fixture;
mod inspect;
mod parse;
mod render;
mod shape;
mod walk;

use etch_plugin_sdk::{Call, ParallelSafety, Plugin, Tool, ToolError, serve_plugin};
use serde_json::{Value, json};

use crate::filter::{Detail, Filters};
use crate::inspect::{Query, inspect};

fn main() -> std::io::Result<()> {
    serve_plugin(&plugin())
}

/// The plugin and its tool.
fn plugin() -> Plugin {
    Plugin::new("rust-intel").tool(
        Tool::new(
            "rust_inspect",
            "Inspect Rust sources without a compiler (parsed with syn): crates and modules, \
             or items (fn, struct, enum, trait, type, const, static, macro_rules, and methods \
             named Type::method) with their signature and doc comment, or their full source \
             with line numbers. Filter by case-insensitive regexes on the crate/module path, \
             the file path and the item name.",
            schema(),
            rust_inspect,
        )
        .parallel_safety(ParallelSafety::ReadOnly),
    )
}

/// The JSON schema of `rust_inspect`'s arguments.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "paths": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Files or directories to read, relative to the working directory (default [\".\"]). Directories are walked for .rs files, skipping target, .git, .etch, node_modules and hidden directories."
            },
            "crate": {
                "type": "string",
                "description": "Regex (case-insensitive) on the crate name (Cargo.toml package name, dashes as underscores, e.g. etch_core) or the module path (e.g. etch_core::agent)."
            },
            "file": {
                "type": "string",
                "description": "Regex (case-insensitive) on the file path: relative to the working directory (e.g. crates/etch-core/src/guard.rs), relative to the given path, or as given."
            },
            "name": {
                "type": "string",
                "description": "Regex (case-insensitive) on the item name; methods are named Type::method (e.g. ^Agent::run$), trait methods Trait::method."
            },
            "detail": {
                "type": "string",
                "enum": ["package", "none", "summary", "full"],
                "description": "package: per crate its modules and files with item counts; none: one row per item (kind, qualified name, file:line); summary (default): signature or declaration shape and doc comment; full: the item's source with line numbers."
            }
        },
        "additionalProperties": false
    })
}

/// `rust_inspect`, relative to the process's working directory.
fn rust_inspect(call: &Call) -> Result<String, ToolError> {
    let base = std::env::current_dir()?;
    inspect(&base, &query(call)?)
}

/// The query a call's arguments ask for.
fn query(call: &Call) -> Result<Query, ToolError> {
    let paths = match call.arguments.get("paths") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .map(|p| {
                p.as_str().map(str::to_owned).ok_or_else(|| {
                    ToolError::new("`paths` must be an array of strings (files or directories)")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ToolError::new(
                "`paths` must be an array of strings (files or directories)",
            ));
        }
    };
    let paths = if paths.is_empty() {
        vec![".".to_owned()]
    } else {
        paths
    };
    Ok(Query {
        paths,
        filters: Filters::new(
            call.opt_str("crate"),
            call.opt_str("file"),
            call.opt_str("name"),
        )?,
        detail: Detail::parse(call.opt_str("detail").unwrap_or("summary"))?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::{Path, PathBuf};

    use super::*;
    use crate::fixture;

    /// Runs `rust_inspect` with `arguments` for the working directory `base`.
    fn run(base: &Path, arguments: Value) -> Result<String, ToolError> {
        let call = Call {
            call_id: "c".into(),
            arguments,
        };
        inspect(base, &query(&call)?)
    }

    /// etch's own workspace.
    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn arguments_default_and_fail_by_name() {
        let call = Call {
            call_id: "c".into(),
            arguments: json!({}),
        };
        let q = query(&call).unwrap();
        assert_eq!(q.paths, ["."]);
        assert_eq!(q.detail, Detail::Summary);
        assert!(!q.filters.any());
        let dir = fixture::crate_dir();
        let err = run(dir.path(), json!({"name": "(", "detail": "none"})).unwrap_err();
        assert!(err.0.contains("`name` filter"), "{}", err.0);
        let err = run(dir.path(), json!({"paths": [1]})).unwrap_err();
        assert!(err.0.contains("`paths`"), "{}", err.0);
        let err = run(dir.path(), json!({"detail": "all"})).unwrap_err();
        assert!(err.0.contains("`detail`"), "{}", err.0);
        let spec = schema();
        assert_eq!(spec["additionalProperties"], json!(false));
        assert!(spec["properties"]["detail"]["enum"].is_array());
    }

    #[test]
    fn summary_shows_signatures_and_docs_and_names_broken_files() {
        let dir = fixture::crate_dir();
        let out = run(dir.path(), json!({"name": "^Widget::(new|fmt)$"})).unwrap();
        assert!(
            out.starts_with(
                "rust_inspect (summary): 2 of 24 items match name /^Widget::(new|fmt)$/; \
                 5 files parsed, 2 crates (demo_crate, "
            ),
            "{out}"
        );
        assert!(
            out.contains("skipped 1 file that failed to parse: demo/src/bad.rs (2:8: "),
            "{out}"
        );
        assert!(
            out.contains(
                "method demo_crate::Widget::new  demo/src/lib.rs:53\n  /// Makes one.\n  \
                 pub fn new(\n      width: u32,\n      height: u32,\n  ) -> Self\n\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "method demo_crate::Widget::fmt  demo/src/lib.rs:75  \
                 (impl std::fmt::Display for Widget)\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn each_filter_narrows() {
        let dir = fixture::crate_dir();
        let rows = |args: Value| {
            let out = run(dir.path(), args).unwrap();
            out.lines()
                .skip(2)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            rows(json!({"crate": "::util", "detail": "none"})),
            [
                "struct demo_crate::util::deep::Answer  demo/src/util/deep.rs:2",
                "method demo_crate::util::deep::Answer::value  demo/src/util/deep.rs:6",
                "fn     demo_crate::util::add  demo/src/util/mod.rs:5",
            ]
        );
        assert_eq!(
            rows(json!({"file": "^tests/", "paths": ["demo"], "detail": "none"})),
            ["fn     demo_crate::tests::smoke::smoke  demo/tests/smoke.rs:2"]
        );
        assert_eq!(
            rows(json!({"crate": "INNER", "name": "type", "detail": "none"})),
            ["fn     demo_crate::inner::deeper::type  demo/src/lib.rs:100"]
        );
    }

    #[test]
    fn full_shows_numbered_source_once() {
        let dir = fixture::crate_dir();
        let out = run(
            dir.path(),
            json!({"name": "^Render", "detail": "full", "paths": ["demo/src/lib.rs"]}),
        )
        .unwrap();
        assert!(
            out.contains(
                "trait demo_crate::Render  demo/src/lib.rs:40-49\n    40\t/// Things that draw.\n    \
                 41\tpub trait Render: Send {\n"
            ),
            "{out}"
        );
        assert!(out.contains("    49\t}\n\n"), "{out}");
        assert!(
            out.contains(
                "method demo_crate::Render::render  demo/src/lib.rs:42-43  (trait Render)\n  \
                 (lines shown above, in demo_crate::Render)\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn package_lists_crates_modules_and_counts() {
        let dir = fixture::crate_dir();
        let out = run(dir.path(), json!({"paths": ["demo"], "detail": "package"})).unwrap();
        assert!(
            out.contains(
                "crate demo_crate (package demo-crate, demo): 4 files, 6 modules, 23 items\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "  demo_crate                 demo/src/lib.rs  17 items: 1 fn, 6 method, 3 struct, \
                 1 enum, 1 union, 1 trait, 1 type, 1 const, 1 static, 1 macro\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "  demo_crate::inner::deeper  demo/src/lib.rs (inline mod)  1 item: 1 fn\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("  demo_crate::util           demo/src/util/mod.rs  1 item: 1 fn\n"),
            "{out}"
        );
        // With a name filter only modules holding a match are listed.
        let out = run(
            dir.path(),
            json!({"paths": ["demo"], "detail": "package", "name": "value"}),
        )
        .unwrap();
        assert!(
            out.contains("1 file, 1 module, 1 item\n  demo_crate::util::deep  demo/src/util/deep.rs  1 item: 1 method\n"),
            "{out}"
        );
    }

    #[test]
    fn zero_results_say_what_was_parsed_and_how_matching_works() {
        let dir = fixture::crate_dir();
        let out = run(
            dir.path(),
            json!({"name": "Widget::area", "crate": "util", "detail": "none"}),
        )
        .unwrap();
        assert!(
            out.starts_with(
                "rust_inspect: nothing matched crate /util/, name /Widget::area/ in paths [\".\"] (detail none).\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "Parsed 5 of 6 .rs files found (6 passed `file`, 1 failed to parse) in 2 crates"
            ),
            "{out}"
        );
        assert!(
            out.contains("`crate` alone matches 3 of the parsed items."),
            "{out}"
        );
        assert!(
            out.contains(
                "`name` alone matches 1 of the parsed items: demo_crate::Widget::area (demo/src/lib.rs)"
            ),
            "{out}"
        );
        assert!(
            out.contains("Sample files: demo/src/bad.rs, demo/src/lib.rs,"),
            "{out}"
        );
        assert!(out.contains("Sample item names: LIMIT, "), "{out}");
        assert!(out.contains("Sample modules: demo_crate, "), "{out}");
        assert!(out.contains("skipped 1 file that failed to parse"), "{out}");
        assert!(
            out.contains("How matching works: `paths` are relative"),
            "{out}"
        );
        assert!(
            out.contains("impl methods (inherent or trait impls) as Type::method"),
            "{out}"
        );

        let out = run(dir.path(), json!({"name": "^area$"})).unwrap();
        assert!(
            out.contains(
                "`name` matches the method part of 1 method name: Widget::area. Methods are \
                 named Type::method, so anchor on the whole name (e.g. ^Widget::area$)"
            ),
            "{out}"
        );

        let out = run(dir.path(), json!({"file": "nothing-like-this"})).unwrap();
        assert!(
            out.contains("`file` alone matches 0 of the 6 files found."),
            "{out}"
        );
        assert!(out.contains("Sample files: demo/src/bad.rs"), "{out}");

        let empty = tempfile::tempdir().unwrap();
        let out = run(empty.path(), json!({})).unwrap();
        assert!(out.contains("No .rs files were found there.\n"), "{out}");
    }

    #[test]
    fn big_answers_are_cut_with_advice() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..3000)
            .map(|i| format!("/// Function number {i}.\npub fn function_{i}(value: u64) -> u64 {{\n    value + {i}\n}}\n"))
            .collect();
        std::fs::write(dir.path().join("many.rs"), body).unwrap();
        let out = run(dir.path(), json!({"detail": "summary"})).unwrap();
        assert!(out.len() <= render::CAP + 400, "{}", out.len());
        assert!(out.contains("[output cut at ~60 KB: shown "), "{out}");
        assert!(out.contains("of 3000 items. Narrow the query"), "{out}");
        assert!(out.ends_with("or a lower `detail` (full > summary > none > package).]\n"));

        // One item bigger than the cap shows its start.
        let body: String = (0..5000)
            .map(|i| format!("    let x{i} = {i};\n"))
            .collect();
        std::fs::write(
            dir.path().join("many.rs"),
            format!("fn huge() {{\n{body}}}\n"),
        )
        .unwrap();
        let out = run(dir.path(), json!({"detail": "full"})).unwrap();
        assert!(out.len() <= render::CAP + 400, "{}", out.len());
        assert!(out.contains("     2\t    let x0 = 0;\n"), "{out}");
        assert!(out.contains("  [.. item cut here]\n"), "{out}");
        assert!(out.contains("shown 0 of 1 items."), "{out}");
    }

    #[test]
    fn etch_core_agent_run() {
        let out = run(
            &workspace(),
            json!({"paths": ["crates/etch-core"], "name": "Agent::run"}),
        )
        .unwrap();
        assert!(
            out.contains("method etch_core::agent::Agent::run  crates/etch-core/src/agent/mod.rs:"),
            "{out}"
        );
        assert!(out.contains("\n  pub async fn run(\n"), "{out}");
        let out = run(
            &workspace(),
            json!({"paths": ["crates/etch-core"], "detail": "package"}),
        )
        .unwrap();
        assert!(
            out.contains("crate etch_core (package etch-core, crates/etch-core): "),
            "{out}"
        );
        assert!(
            out.contains("\n  etch_core::agent  ") || out.contains("\n  etch_core::agent "),
            "{out}"
        );
        assert!(out.contains("crates/etch-core/src/agent/mod.rs"), "{out}");
    }
}
