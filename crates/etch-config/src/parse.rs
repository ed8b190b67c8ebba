//! Reads one config file's text into a [`Layer`] of validated values, walking
//! the TOML tree against the schema and reporting every finding with its line.
//!
//! This module owns the shape rules: which tables and keys exist where, hook
//! event names, array tables versus plain tables, required entry keys and
//! credential-looking keys. Value-level rules live in `validate`, cross-key
//! rules of an entry in `rules`. It must not know other files, merging or
//! precedence: one text in, one layer out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::credentials::looks_like_credential;
use crate::diagnostic::{Diagnostic, Severity};
use crate::lines::LineIndex;
use crate::problem::{Problem, did_you_mean};
use crate::rules;
use crate::schema::{self, HOOK_EVENTS, HOOKS_TABLE, Requirement, TableKind, TableSpec};
use crate::validate;
use crate::value::Value;

/// The valid values of one file, ready to merge over lower layers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layer {
    /// The file the values came from.
    pub path: PathBuf,
    /// Plain-table values by dotted `table.key`.
    pub scalars: BTreeMap<String, Value>,
    /// Array-table entries in source order.
    pub entries: Vec<Entry>,
}

/// One `[[table]]` entry that passed validation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The schema table (`hooks.*` for every hook event).
    pub table: &'static TableSpec,
    /// The dotted name as written: `plugins`, `hooks.PreToolUse`, ….
    pub name: String,
    /// The keys the entry sets.
    pub values: BTreeMap<&'static str, Value>,
    /// Byte offset of the entry, to keep source order across hook events.
    pub offset: usize,
    /// The file the entry came from.
    pub source: PathBuf,
}

/// Parses `text`, the contents of `path`. A syntax error yields no layer at
/// all, so nothing from a broken file is used; other findings only drop the
/// offending value (or entry) and keep the rest.
pub(crate) fn parse(path: &Path, text: &str) -> (Option<Layer>, Vec<Diagnostic>) {
    let lines = LineIndex::new(text);
    let mut walker = Walker {
        path,
        lines: &lines,
        layer: Layer {
            path: path.to_path_buf(),
            scalars: BTreeMap::new(),
            entries: Vec::new(),
        },
        diagnostics: Vec::new(),
    };
    match DeTable::parse(text) {
        Ok(root) => {
            walker.container("", root.get_ref());
            walker.layer.entries.sort_by_key(|entry| entry.offset);
            walker.diagnostics.sort_by_key(|diagnostic| diagnostic.line);
            (Some(walker.layer), walker.diagnostics)
        }
        Err(error) => {
            let offset = error.span().map(|span| span.start);
            let problem = Problem::Syntax {
                message: error.message().to_owned(),
                column: offset.map_or(1, |at| lines.column(at)),
            };
            walker.report(Severity::Error, offset, None, &problem);
            (None, walker.diagnostics)
        }
    }
}

/// State of one walk over one file.
struct Walker<'a> {
    /// The file, for diagnostics.
    path: &'a Path,
    /// Offsets to lines for this file's text.
    lines: &'a LineIndex<'a>,
    /// What the file contributes.
    layer: Layer,
    /// What is wrong with it.
    diagnostics: Vec<Diagnostic>,
}

impl Walker<'_> {
    /// Records a finding at byte `offset`.
    fn report(
        &mut self,
        severity: Severity,
        offset: Option<usize>,
        key: Option<String>,
        problem: &Problem,
    ) {
        self.diagnostics.push(Diagnostic {
            severity,
            path: self.path.to_path_buf(),
            line: offset.map(|at| self.lines.line(at)),
            key,
            message: problem.to_string(),
        });
    }

    /// Records an error about `key` at byte `offset`.
    fn error(&mut self, offset: usize, key: &str, problem: &Problem) {
        self.report(Severity::Error, Some(offset), Some(key.to_owned()), problem);
    }

    /// Walks a table that is not itself in the schema: the root, `[tools]`
    /// or `[hooks]`; its children are tables.
    fn container(&mut self, prefix: &str, table: &DeTable<'_>) {
        for (key, value) in table {
            let name = key.get_ref().as_ref();
            let dotted = join(prefix, name);
            let at = key.span().start;
            if let Some(spec) = table_spec(&dotted) {
                self.table(spec, &dotted, value);
            } else if looks_like_credential(name) {
                self.error(
                    at,
                    &dotted,
                    &Problem::Credential {
                        key: name.to_owned(),
                    },
                );
            } else if prefix == "hooks" {
                let problem = Problem::UnknownHookEvent {
                    event: name.to_owned(),
                    hint: did_you_mean(name, HOOK_EVENTS),
                    valid: HOOK_EVENTS.join(", "),
                };
                self.error(at, &dotted, &problem);
                self.scan_credentials(&dotted, value.get_ref());
            } else if is_container(&dotted) {
                match value.get_ref() {
                    DeValue::Table(inner) => self.container(&dotted, inner),
                    other => {
                        let problem = Problem::ExpectedTable {
                            table: dotted.clone(),
                            found: validate::found(other),
                        };
                        self.error(value.span().start, &dotted, &problem);
                    }
                }
            } else {
                self.unknown_table(prefix, name, &dotted, at, value.get_ref());
            }
        }
    }

    /// Warns about a child of a container that the schema does not know, and
    /// still reports credential-looking keys inside it.
    fn unknown_table(
        &mut self,
        prefix: &str,
        name: &str,
        dotted: &str,
        at: usize,
        value: &DeValue<'_>,
    ) {
        let valid = children_of(prefix);
        let candidates: Vec<&str> = valid.iter().map(String::as_str).collect();
        let hint = if prefix.is_empty() && !value.is_table() {
            key_home(name).map_or_else(
                || did_you_mean(dotted, &candidates),
                |home| format!("; did you mean `{home}`?"),
            )
        } else {
            did_you_mean(dotted, &candidates)
        };
        let problem = Problem::UnknownTable {
            name: dotted.to_owned(),
            hint,
            valid: valid.join(", "),
        };
        self.report(
            Severity::Warning,
            Some(at),
            Some(dotted.to_owned()),
            &problem,
        );
        self.scan_credentials(dotted, value);
    }

    /// Walks the value of a schema table: a `[table]` or `[[table]]` entries.
    fn table(&mut self, spec: &'static TableSpec, dotted: &str, value: &Spanned<DeValue<'_>>) {
        match (spec.kind, value.get_ref()) {
            (TableKind::Table, DeValue::Table(table)) => self.plain_table(spec, dotted, table),
            (TableKind::ArrayTable, DeValue::Array(items)) => {
                for item in items {
                    match item.get_ref() {
                        DeValue::Table(table) => {
                            self.entry(spec, dotted, item.span().start, table);
                        }
                        other => self.not_array_of_tables(dotted, item.span().start, other),
                    }
                }
            }
            (TableKind::Table, other) => {
                let problem = Problem::ExpectedTable {
                    table: dotted.to_owned(),
                    found: validate::found(other),
                };
                self.error(value.span().start, dotted, &problem);
            }
            (TableKind::ArrayTable, other) => {
                self.not_array_of_tables(dotted, value.span().start, other);
            }
        }
    }

    /// Reports something other than `[[dotted]]` entries.
    fn not_array_of_tables(&mut self, dotted: &str, offset: usize, found: &DeValue<'_>) {
        let problem = Problem::ExpectedArrayOfTables {
            table: dotted.to_owned(),
            found: validate::found(found),
        };
        self.error(offset, dotted, &problem);
    }

    /// Validates each key of a plain table; valid values join the layer.
    fn plain_table(&mut self, spec: &'static TableSpec, dotted: &str, table: &DeTable<'_>) {
        for (key, value) in table {
            let name = key.get_ref().as_ref();
            let key_dotted = join(dotted, name);
            if let Some(key_spec) = spec.key(name) {
                match validate::check(key_spec, value.get_ref()) {
                    Ok(valid) => {
                        self.layer.scalars.insert(key_dotted, valid);
                    }
                    Err(problem) => self.error(value.span().start, &key_dotted, &problem),
                }
            } else if let Some(nested) = table_spec(&key_dotted) {
                self.table(nested, &key_dotted, value);
            } else {
                self.unknown_key(spec, dotted, name, key.span().start, value.get_ref());
            }
        }
    }

    /// Reports a key `spec` does not declare: a credential error, or an
    /// unknown-key warning listing the table's keys (plus errors for any
    /// credential-looking key inside its value). Returns whether it found an
    /// error.
    fn unknown_key(
        &mut self,
        spec: &TableSpec,
        table: &str,
        name: &str,
        at: usize,
        value: &DeValue<'_>,
    ) -> bool {
        let key_dotted = join(table, name);
        if looks_like_credential(name) {
            let problem = Problem::Credential {
                key: name.to_owned(),
            };
            self.error(at, &key_dotted, &problem);
            return true;
        }
        let credentials = self.scan_credentials(&key_dotted, value);
        let mut valid: Vec<&str> = spec.keys.iter().map(|key| key.name).collect();
        let nested: Vec<String> = children_of(spec.name)
            .into_iter()
            .filter_map(|child| {
                child
                    .strip_prefix(&format!("{}.", spec.name))
                    .map(str::to_owned)
            })
            .collect();
        valid.extend(nested.iter().map(String::as_str));
        let problem = Problem::UnknownKey {
            key: name.to_owned(),
            table: table.to_owned(),
            hint: did_you_mean(name, &valid),
            valid: valid.join(", "),
        };
        self.report(Severity::Warning, Some(at), Some(key_dotted), &problem);
        credentials
    }

    /// Reports every credential-looking key inside a value the schema does
    /// not describe (E-CFG-04 applies anywhere). Returns whether it found one.
    fn scan_credentials(&mut self, dotted: &str, value: &DeValue<'_>) -> bool {
        let mut found = false;
        match value {
            DeValue::Table(table) => {
                for (key, inner) in table {
                    let name = key.get_ref().as_ref();
                    let inner_dotted = join(dotted, name);
                    if looks_like_credential(name) {
                        let problem = Problem::Credential {
                            key: name.to_owned(),
                        };
                        self.error(key.span().start, &inner_dotted, &problem);
                        found = true;
                    } else {
                        found |= self.scan_credentials(&inner_dotted, inner.get_ref());
                    }
                }
            }
            DeValue::Array(items) => {
                for item in items {
                    found |= self.scan_credentials(dotted, item.get_ref());
                }
            }
            _ => {}
        }
        found
    }

    /// Validates one `[[table]]` entry: each key, the required keys, then the
    /// table's cross-key [`EntryRule`](crate::schema::EntryRule). It joins the
    /// layer only when it has no errors, so a hook with a broken matcher or
    /// no command never runs.
    fn entry(&mut self, spec: &'static TableSpec, dotted: &str, at: usize, table: &DeTable<'_>) {
        let mut values = BTreeMap::new();
        let mut spans = BTreeMap::new();
        let mut failed = Vec::new();
        for (key, value) in table {
            let name = key.get_ref().as_ref();
            if let Some(key_spec) = spec.key(name) {
                spans.insert(key_spec.name, value.span().start);
                match validate::check(key_spec, value.get_ref()) {
                    Ok(valid) => {
                        values.insert(key_spec.name, valid);
                    }
                    Err(problem) => {
                        self.error(value.span().start, &join(dotted, name), &problem);
                        failed.push(key_spec.name);
                    }
                }
            } else if self.unknown_key(spec, dotted, name, key.span().start, value.get_ref()) {
                failed.push("");
            }
        }
        let enabled = values.get("disabled").and_then(Value::as_bool) != Some(true);
        for key_spec in spec.keys {
            let needed = match key_spec.required {
                Requirement::Optional => false,
                Requirement::Always => true,
                Requirement::WhenEnabled => enabled,
            };
            // A string must not be blank; any other value is there.
            let present = values
                .get(key_spec.name)
                .is_some_and(|value| value.as_str().is_none_or(|text| !text.trim().is_empty()));
            if needed && !present && !failed.contains(&key_spec.name) {
                let (what, unless) = if key_spec.required == Requirement::Always {
                    (format!("every [[{dotted}]] entry"), "")
                } else {
                    (
                        format!("an enabled [[{dotted}]] entry"),
                        "; set disabled = true to keep the entry switched off",
                    )
                };
                let problem = Problem::Missing {
                    what,
                    key: key_spec.name,
                    unless,
                };
                self.error(at, &join(dotted, key_spec.name), &problem);
                failed.push(key_spec.name);
            }
        }
        // Cross-key rules run only on entries whose keys all passed, so they
        // never report a consequence of an error already shown.
        if let Some(rule) = spec.rule
            && failed.is_empty()
        {
            for (key, problem) in rules::check(rule, dotted, &values) {
                let offset = spans.get(key).copied().unwrap_or(at);
                self.error(offset, &join(dotted, key), &problem);
                failed.push(key);
            }
        }
        if failed.is_empty() {
            self.layer.entries.push(Entry {
                table: spec,
                name: dotted.to_owned(),
                values,
                offset: at,
                source: self.path.to_path_buf(),
            });
        }
    }
}

/// `prefix.name`, or `name` at the root.
fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// The schema table for a dotted name as written: `hooks.<Event>` finds the
/// hook table only for a real event name.
fn table_spec(dotted: &str) -> Option<&'static TableSpec> {
    match dotted.strip_prefix("hooks.") {
        Some(event) if HOOK_EVENTS.contains(&event) => schema::table(HOOKS_TABLE),
        Some(_) => None,
        None => schema::table(dotted),
    }
}

/// Whether schema tables live below `dotted` (`tools`, `hooks`).
fn is_container(dotted: &str) -> bool {
    schema::TABLES.iter().any(|table| {
        table
            .name
            .strip_prefix(dotted)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The names valid directly below `prefix` (the root when empty), in schema
/// order: `session`, …, `tools`, … at the root; `tools.bash` below `tools`.
fn children_of(prefix: &str) -> Vec<String> {
    let mut children: Vec<String> = Vec::new();
    for table in schema::TABLES {
        let rest = if prefix.is_empty() {
            Some(table.name)
        } else {
            table
                .name
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('.'))
        };
        let Some(rest) = rest else { continue };
        let first = rest.split('.').next().unwrap_or(rest);
        let child = join(prefix, first);
        if !children.contains(&child) {
            children.push(child);
        }
    }
    children
}

/// The plain table that declares a key called `name`, for a top-level key
/// that was meant to sit in a table (`model = …` → `provider.model`).
fn key_home(name: &str) -> Option<String> {
    schema::TABLES
        .iter()
        .filter(|table| table.kind == TableKind::Table)
        .find(|table| table.key(name).is_some())
        .map(|table| format!("{}.{name}", table.name))
}

/// The layer of `text` read as `path`, for tests of the modules that
/// take layers; a finding fails the test.
#[cfg(test)]
pub(crate) fn test_layer(path: &str, text: &str) -> Layer {
    let (layer, diagnostics) = parse(Path::new(path), text);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    layer.expect("valid layer")
}

#[cfg(test)]
mod tests;
