//! Where an effective value came from (E-CFG-18).
//!
//! This module owns the provenance type and its wording in
//! `config show --effective`. It must not know how values are merged.

use std::fmt;
use std::path::PathBuf;

/// The layer that set a value: compiled default < user file < project file
/// < CLI flag (E-CFG-03).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// No file set it; the compiled default (or nothing) applies.
    Default,
    /// The config file that set it last.
    File(PathBuf),
    /// The caller overrode it from a CLI flag ([`Loaded::mark_flag`](crate::Loaded::mark_flag)).
    Flag,
}

impl fmt::Display for Source {
    /// `default`, `from {path}` or `from a flag`: the comment `--effective`
    /// puts after each value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File(path) => write!(f, "from {}", path.display()),
            Self::Flag => f.write_str("from a flag"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each source reads as the comment `--effective` prints.
    #[test]
    fn displays_as_comment_text() {
        assert_eq!(Source::Default.to_string(), "default");
        assert_eq!(
            Source::File("/h/.etch/config.toml".into()).to_string(),
            "from /h/.etch/config.toml"
        );
        assert_eq!(Source::Flag.to_string(), "from a flag");
    }
}
