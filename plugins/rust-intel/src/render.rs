//! The text `rust_inspect` answers with: the matching items at the asked
//! detail level (or the package overview), notes on skipped files, the
//! ~60 KB cap with how to narrow, and, when nothing matches, what was
//! parsed and how paths and names are matched, so the query can be fixed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::filter::{Detail, Filters};
use crate::inspect::{Inventory, ParsedFile, Query};
use crate::parse::{Item, Kind};
use crate::walk::{MAX_FILES, SKIPPED};

/// Output beyond this many bytes is cut (at a block boundary).
pub const CAP: usize = 60_000;

/// How many failures, samples and crate names lists show.
const LIST: usize = 8;

/// One matching item and its file.
type Hit<'a> = (&'a ParsedFile, &'a Item);

/// A crate in `package` output: its name, package name and directory.
type CrateKey<'a> = (&'a str, &'a str, &'a str);

/// A module row in `package` output: the module path, the file's label,
/// whether it is an inline `mod`, and its matching items by kind.
type ModuleRow<'a> = (&'a str, &'a str, bool, BTreeMap<Kind, usize>);

/// Renders the answer to `query` from what was parsed.
pub fn render(inventory: &Inventory, query: &Query) -> String {
    let filters = &query.filters;
    let hits: Vec<Hit<'_>> = inventory
        .files
        .iter()
        .flat_map(|f| f.parsed.items.iter().map(move |item| (f, item)))
        .filter(|(f, item)| item_matches(filters, f, item))
        .collect();
    let (blocks, unit) = match query.detail {
        Detail::Package => (package_blocks(inventory, filters), "rows"),
        Detail::None => (hits.iter().map(|hit| row(*hit)).collect(), "items"),
        Detail::Summary => (hits.iter().map(|hit| summary(*hit)).collect(), "items"),
        Detail::Full => (full_blocks(&hits), "items"),
    };
    if blocks.is_empty() {
        return nothing_matched(inventory, query);
    }
    let mut out = header(inventory, query, hits.len());
    out.push_str(&notes(inventory));
    out.push('\n');
    let mut shown = 0;
    for block in &blocks {
        if out.len() + block.len() > CAP {
            if shown == 0 {
                // One huge item: show its start rather than nothing.
                let room = CAP.saturating_sub(out.len());
                let cut = block[..floor_boundary(block, room)]
                    .rfind('\n')
                    .map_or(0, |i| i + 1);
                out.push_str(&block[..cut]);
                let _ = writeln!(out, "  [.. item cut here]");
            }
            break;
        }
        out.push_str(block);
        shown += 1;
    }
    if shown < blocks.len() {
        let _ = writeln!(
            out,
            "\n[output cut at ~{} KB: shown {shown} of {} {unit}. Narrow the query: a `name` \
             regex (e.g. ^Type::method$), a `file` or `crate` regex, fewer `paths`, or a \
             lower `detail` (full > summary > none > package).]",
            CAP / 1000,
            blocks.len()
        );
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Whether an item passes the `crate` and `name` filters (the `file`
/// filter chose the files already).
fn item_matches(filters: &Filters, file: &ParsedFile, item: &Item) -> bool {
    filters.crate_matches(&file.file.krate, &file.file.package, &item.module)
        && filters.name_matches(&item.name)
}

/// The first line: what matched out of what was parsed.
fn header(inventory: &Inventory, query: &Query, hits: usize) -> String {
    let crates = inventory.crates();
    let parsed = format!(
        "{} parsed, {} ({})",
        plural(inventory.files.len(), "file"),
        plural(crates.len(), "crate"),
        listed(&crates)
    );
    let total = inventory.item_count();
    let matched = if query.filters.any() {
        format!(
            "{hits} of {} match {}",
            plural(total, "item"),
            query.filters.describe()
        )
    } else {
        plural(total, "item")
    };
    format!(
        "rust_inspect ({}): {matched}; {parsed}\n",
        query.detail.name()
    )
}

/// Lines about skipped files and the walk's limit.
fn notes(inventory: &Inventory) -> String {
    let mut out = String::new();
    if !inventory.failures.is_empty() {
        let named: Vec<String> = inventory
            .failures
            .iter()
            .take(LIST)
            .map(|(label, why)| format!("{label} ({why})"))
            .collect();
        let more = inventory.failures.len().saturating_sub(LIST);
        let _ = writeln!(
            out,
            "skipped {} that failed to parse: {}{}",
            plural(inventory.failures.len(), "file"),
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        );
    }
    if inventory.truncated {
        let _ = writeln!(
            out,
            "the walk stopped at {MAX_FILES} files: pass narrower `paths`"
        );
    }
    out
}

/// `detail: none`: one row per item.
fn row((file, item): Hit<'_>) -> String {
    format!(
        "{:<6} {}  {}:{}\n",
        item.kind.word(),
        item.qualified(),
        file.file.label,
        item.line
    )
}

/// The heading line of an item's block: kind, qualified name, place and,
/// for methods, their impl or trait.
fn heading((file, item): Hit<'_>, lines: &str) -> String {
    let context = item
        .context
        .as_ref()
        .map(|c| format!("  ({c})"))
        .unwrap_or_default();
    format!(
        "{} {}  {}:{lines}{context}\n",
        item.kind.word(),
        item.qualified(),
        file.file.label
    )
}

/// `detail: summary`: heading, doc comment, attributes, signature.
fn summary(hit: Hit<'_>) -> String {
    let item = hit.1;
    let mut out = heading(hit, &item.line.to_string());
    for line in item.doc.lines() {
        let _ = writeln!(out, "{}", format!("  /// {line}").trim_end());
    }
    for attr in &item.attrs {
        let _ = writeln!(out, "  {attr}");
    }
    for line in item.signature.lines() {
        let _ = writeln!(out, "{}", format!("  {line}").trim_end());
    }
    out.push('\n');
    out
}

/// `detail: full`: each item's lines, numbered; an item inside one
/// already shown (a trait's method) points there instead.
fn full_blocks(hits: &[Hit<'_>]) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut last: Option<(&str, usize, usize, String)> = None;
    for &(file, item) in hits {
        let lines = format!("{}-{}", item.start_line, item.end_line);
        let mut out = heading((file, item), &lines);
        let label = file.file.label.as_str();
        match &last {
            Some((shown, start, end, name))
                if *shown == label && *start <= item.start_line && item.end_line <= *end =>
            {
                let _ = writeln!(out, "  (lines shown above, in {name})");
            }
            _ => {
                let text = file.text.as_deref().unwrap_or("");
                let count = item.end_line + 1 - item.start_line;
                for (i, line) in text
                    .lines()
                    .skip(item.start_line - 1)
                    .take(count)
                    .enumerate()
                {
                    let _ = writeln!(out, "{:>6}\t{line}", item.start_line + i);
                }
                last = Some((label, item.start_line, item.end_line, item.qualified()));
            }
        }
        out.push('\n');
        blocks.push(out);
    }
    blocks
}

/// `detail: package`: per crate a heading, then a row per module and
/// file with its matching items counted by kind. With a `name` filter,
/// modules without a matching item are left out.
fn package_blocks(inventory: &Inventory, filters: &Filters) -> Vec<String> {
    let mut crates: Vec<(CrateKey<'_>, Vec<ModuleRow<'_>>)> = Vec::new();
    for f in &inventory.files {
        let key = (
            f.file.krate.as_str(),
            f.file.package.as_str(),
            f.file.crate_dir.as_str(),
        );
        let at = crates
            .iter()
            .position(|(k, _)| *k == key)
            .unwrap_or_else(|| {
                crates.push((key, Vec::new()));
                crates.len() - 1
            });
        for module in &f.parsed.modules {
            if !filters.crate_matches(key.0, key.1, module) {
                continue;
            }
            let mut kinds = BTreeMap::new();
            for item in f.parsed.items.iter().filter(|i| &i.module == module) {
                if filters.name_matches(&item.name) {
                    *kinds.entry(item.kind).or_insert(0) += 1;
                }
            }
            if filters.name.is_some() && kinds.is_empty() {
                continue;
            }
            let inline = *module != f.file.module;
            crates[at]
                .1
                .push((module.as_str(), f.file.label.as_str(), inline, kinds));
        }
    }
    let mut blocks = Vec::new();
    for ((krate, package, dir), rows) in &mut crates {
        if rows.is_empty() {
            continue;
        }
        rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let files: BTreeSet<&str> = rows.iter().map(|r| r.1).collect();
        let items: usize = rows.iter().flat_map(|r| r.3.values()).sum();
        blocks.push(format!(
            "crate {krate} (package {package}, {dir}): {}, {}, {}\n",
            plural(files.len(), "file"),
            plural(rows.len(), "module"),
            plural(items, "item")
        ));
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).min(48);
        for (module, label, inline, kinds) in rows {
            let count: usize = kinds.values().sum();
            let by_kind: Vec<String> = kinds
                .iter()
                .map(|(kind, n)| format!("{n} {}", kind.word()))
                .collect();
            let by_kind = if by_kind.is_empty() {
                String::new()
            } else {
                format!(": {}", by_kind.join(", "))
            };
            blocks.push(format!(
                "  {module:<width$}  {label}{}  {}{by_kind}\n",
                if *inline { " (inline mod)" } else { "" },
                plural(count, "item")
            ));
        }
    }
    blocks
}

/// The zero-result answer: what was parsed, what each filter matches on
/// its own, samples of file labels and item names, and the rules.
fn nothing_matched(inventory: &Inventory, query: &Query) -> String {
    let filters = &query.filters;
    let mut out = format!(
        "rust_inspect: nothing matched {} in paths {:?} (detail {}).\n",
        filters.describe(),
        query.paths,
        query.detail.name()
    );
    if inventory.found == 0 {
        out.push_str("No .rs files were found there.\n");
    } else {
        let crates = inventory.crates();
        let _ = writeln!(
            out,
            "Parsed {} of {} found ({} passed `file`, {} failed to parse) in {} ({}), holding {}.",
            inventory.files.len(),
            plural(inventory.found, ".rs file"),
            inventory.file_matched(),
            inventory.failures.len(),
            plural(crates.len(), "crate"),
            listed(&crates),
            plural(inventory.item_count(), "item")
        );
    }
    let all: Vec<Hit<'_>> = inventory
        .files
        .iter()
        .flat_map(|f| f.parsed.items.iter().map(move |item| (f, item)))
        .collect();
    if filters.file.is_some() {
        let _ = writeln!(
            out,
            "`file` alone matches {} of the {} found.",
            inventory.file_matched(),
            plural(inventory.found, "file")
        );
    }
    if filters.krate.is_some() {
        let alone = Filters {
            krate: filters.krate.clone(),
            ..Filters::default()
        };
        let n = all
            .iter()
            .filter(|(f, i)| item_matches(&alone, f, i))
            .count();
        let _ = writeln!(out, "`crate` alone matches {n} of the parsed items.");
    }
    let mut name_alone = false;
    if filters.name.is_some() {
        let alone = Filters {
            name: filters.name.clone(),
            ..Filters::default()
        };
        let named: Vec<String> = all
            .iter()
            .filter(|(f, i)| item_matches(&alone, f, i))
            .map(|(f, i)| format!("{} ({})", i.qualified(), f.file.label))
            .collect();
        name_alone = !named.is_empty();
        let _ = writeln!(
            out,
            "`name` alone matches {} of the parsed items{}",
            named.len(),
            if named.is_empty() {
                ".".to_owned()
            } else {
                format!(": {}", listed(&named))
            }
        );
    }
    if let Some(name) = filters.name.as_ref().filter(|_| !name_alone) {
        let methods: Vec<&str> = all
            .iter()
            .filter_map(|(_, i)| {
                let (_, last) = i.name.rsplit_once("::")?;
                name.is_match(last).then_some(i.name.as_str())
            })
            .collect();
        if !methods.is_empty() {
            let _ = writeln!(
                out,
                "`name` matches the method part of {}: {}. Methods are named Type::method, so \
                 anchor on the whole name (e.g. ^{}$) or drop the anchors.",
                plural(methods.len(), "method name"),
                listed(&methods),
                methods[0]
            );
        }
    }
    if !inventory.sample_files.is_empty() {
        let _ = writeln!(out, "Sample files: {}", inventory.sample_files.join(", "));
    }
    let modules: Vec<&str> = inventory
        .files
        .iter()
        .flat_map(|f| f.parsed.modules.iter().map(String::as_str))
        .collect();
    if !modules.is_empty() {
        let _ = writeln!(out, "Sample modules: {}", spread(&modules).join(", "));
    }
    if !all.is_empty() {
        let names: Vec<String> = all.iter().map(|(_, i)| i.name.clone()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let _ = writeln!(out, "Sample item names: {}", spread(&names).join(", "));
    }
    out.push_str(&notes(inventory));
    let _ = writeln!(
        out,
        "How matching works: `paths` are relative to the working directory {base}; directories \
         are walked for .rs files, skipping {skipped} and hidden directories. Filters are \
         case-insensitive regexes found anywhere in the text (anchor with ^ and $); every given \
         filter must match. `file` is tried on the path relative to the working directory (as \
         in Sample files), on the path relative to the `paths` entry it was found under, and on \
         that entry joined with it. `crate` is tried on the crate name (the nearest Cargo.toml \
         [package] name, dashes as underscores), the package name, and the module path \
         (crate::a::b: src/lib.rs and src/main.rs are the crate root, src/a/mod.rs is a, \
         src/a/b.rs is a::b, inline mods extend it). `name` is tried on the item's own name: \
         free items by name, impl methods (inherent or trait impls) as Type::method, methods \
         declared in a trait as Trait::method.",
        base = inventory.base,
        skipped = SKIPPED.join(", ")
    );
    out
}

/// Up to [`LIST`] entries spread evenly over `all`, without repeats.
fn spread<'a>(all: &[&'a str]) -> Vec<&'a str> {
    let step = all.len().div_ceil(LIST).max(1);
    let mut picked: Vec<&str> = Vec::new();
    for entry in all.iter().step_by(step) {
        if !picked.contains(entry) {
            picked.push(entry);
        }
    }
    picked
}

/// The first [`LIST`] entries, with how many more.
fn listed<S: AsRef<str>>(all: &[S]) -> String {
    let shown: Vec<&str> = all.iter().take(LIST).map(AsRef::as_ref).collect();
    let more = all.len().saturating_sub(LIST);
    if more > 0 {
        format!("{}, and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// `1 item`, `2 items`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
