//! The query of one `rust_inspect` call: the detail level and the three
//! optional regex filters (`crate`, `file`, `name`), compiled
//! case-insensitively, and what each of them is matched against.

use etch_plugin_sdk::ToolError;
use regex::{Regex, RegexBuilder};

/// How much `rust_inspect` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Per crate: its modules and files with item counts.
    Package,
    /// One compact row per item: kind, qualified name, file:line.
    None,
    /// Per item: its signature or declaration shape and its doc comment.
    Summary,
    /// Per item: its source with line numbers, whole bodies.
    Full,
}

impl Detail {
    /// The level named `name` (`package`, `none`, `summary`, `full`).
    pub fn parse(name: &str) -> Result<Self, ToolError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "package" => Ok(Self::Package),
            "none" => Ok(Self::None),
            "summary" => Ok(Self::Summary),
            "full" => Ok(Self::Full),
            other => Err(ToolError::new(format!(
                "`detail` must be one of package, none, summary, full (got {other:?})"
            ))),
        }
    }

    /// The level's name, as the schema spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Package => "package",
            Self::None => "none",
            Self::Summary => "summary",
            Self::Full => "full",
        }
    }
}

/// The compiled filters; an omitted filter matches everything.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// `crate`: the crate name or the module path.
    pub krate: Option<Regex>,
    /// `file`: the displayed, root-relative or raw path of the file.
    pub file: Option<Regex>,
    /// `name`: the item name (`Type::method` for methods).
    pub name: Option<Regex>,
}

impl Filters {
    /// Compiles the given filters; an invalid regex is a tool error
    /// naming its filter.
    pub fn new(
        krate: Option<&str>,
        file: Option<&str>,
        name: Option<&str>,
    ) -> Result<Self, ToolError> {
        Ok(Self {
            krate: compile("crate", krate)?,
            file: compile("file", file)?,
            name: compile("name", name)?,
        })
    }

    /// Whether `file` passes: any of the file's paths matches.
    pub fn file_matches(&self, paths: &[&str]) -> bool {
        self.file
            .as_ref()
            .is_none_or(|re| paths.iter().any(|p| re.is_match(p)))
    }

    /// Whether `crate` passes for a module: the crate name (with
    /// underscores), the package name (as written) or the module path
    /// (`crate::a::b`) matches.
    pub fn crate_matches(&self, krate: &str, package: &str, module: &str) -> bool {
        self.krate
            .as_ref()
            .is_none_or(|re| re.is_match(krate) || re.is_match(package) || re.is_match(module))
    }

    /// Whether `name` passes for an item named `name`.
    pub fn name_matches(&self, name: &str) -> bool {
        self.name.as_ref().is_none_or(|re| re.is_match(name))
    }

    /// Whether any filter was given.
    pub fn any(&self) -> bool {
        self.krate.is_some() || self.file.is_some() || self.name.is_some()
    }

    /// The given filters as `crate /x/, name /y/`, or `no filters`.
    pub fn describe(&self) -> String {
        let given: Vec<String> = [
            ("crate", &self.krate),
            ("file", &self.file),
            ("name", &self.name),
        ]
        .iter()
        .filter_map(|(label, re)| re.as_ref().map(|re| format!("{label} /{}/", re.as_str())))
        .collect();
        if given.is_empty() {
            "no filters".to_owned()
        } else {
            given.join(", ")
        }
    }
}

/// Compiles one filter case-insensitively.
fn compile(label: &str, pattern: Option<&str>) -> Result<Option<Regex>, ToolError> {
    let Some(pattern) = pattern else {
        return Ok(None);
    };
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(1 << 20)
        .build()
        .map(Some)
        .map_err(|err| {
            ToolError::new(format!(
                "the `{label}` filter {pattern:?} is not a valid regex: {err}"
            ))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn filters_match_case_insensitively_and_default_to_everything() {
        let none = Filters::new(None, None, None).unwrap();
        assert!(!none.any());
        assert!(none.name_matches("anything"));
        assert!(none.file_matches(&["a.rs"]));
        assert!(none.crate_matches("a", "a", "a::b"));
        assert_eq!(none.describe(), "no filters");

        let f = Filters::new(Some("CORE::agent$"), Some("^src/"), Some("agent::RUN")).unwrap();
        assert!(f.name_matches("Agent::run"));
        assert!(!f.name_matches("run"));
        assert!(f.crate_matches("etch_core", "etch-core", "etch_core::agent"));
        assert!(!f.crate_matches("etch_core", "etch-core", "etch_core::agent::tests"));
        assert!(f.file_matches(&["crates/x/src/a.rs", "src/a.rs"]));
        assert!(!f.file_matches(&["crates/x/src/a.rs"]));
        assert_eq!(
            f.describe(),
            "crate /CORE::agent$/, file /^src//, name /agent::RUN/"
        );
        // The package name as written also counts.
        let dashed = Filters::new(Some("^etch-core$"), None, None).unwrap();
        assert!(dashed.crate_matches("etch_core", "etch-core", "etch_core"));
    }

    #[test]
    fn invalid_regex_names_its_filter() {
        let err = Filters::new(None, Some("(unclosed"), None).unwrap_err();
        assert!(err.0.contains("`file` filter"), "{}", err.0);
        let err = Filters::new(None, None, Some("a[")).unwrap_err();
        assert!(err.0.contains("`name` filter"), "{}", err.0);
        let err = Filters::new(Some("*"), None, None).unwrap_err();
        assert!(err.0.contains("`crate` filter"), "{}", err.0);
    }

    #[test]
    fn detail_levels_parse() {
        assert_eq!(Detail::parse("Full").unwrap(), Detail::Full);
        assert_eq!(Detail::parse("package").unwrap().name(), "package");
        assert!(
            Detail::parse("everything")
                .unwrap_err()
                .0
                .contains("detail")
        );
    }
}
