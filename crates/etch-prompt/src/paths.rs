//! Path helpers shared by discovery and rendering: absolute paths, the
//! root → cwd directory walk and the `/`-separated form shown to the model.
//!
//! This module owns only path arithmetic. It must not touch the filesystem
//! beyond what `std::path::absolute` needs (the process cwd for a relative
//! path), and must not know which files are looked for.

use std::path::{MAIN_SEPARATOR, Path, PathBuf};

/// The path with `/` separators on every platform (P-PROMPT-09, P-PROMPT-11),
/// so prompts and diagnostics read the same everywhere.
pub(crate) fn slash_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if MAIN_SEPARATOR == '/' {
        text.into_owned()
    } else {
        text.replace(MAIN_SEPARATOR, "/")
    }
}

/// `path` made absolute without resolving symlinks, so the paths the model
/// sees are the ones the user typed; a path that cannot be made absolute (an
/// empty one) is kept as given rather than failing the prompt.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The directories from the filesystem root down to `cwd`, inclusive, in
/// that order (E-CTX-03: parents before children).
pub(crate) fn root_first(cwd: &Path) -> Vec<&Path> {
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk starts at `/` and ends at the cwd itself.
    #[test]
    fn walk_is_root_first() {
        let dirs = root_first(Path::new("/a/b"));
        assert_eq!(dirs, [Path::new("/"), Path::new("/a"), Path::new("/a/b")]);
    }

    /// Relative paths become absolute; absolute ones stay.
    #[test]
    fn absolute_keeps_absolute_paths() {
        assert_eq!(absolute(Path::new("/x/y")), PathBuf::from("/x/y"));
        assert!(absolute(Path::new("rel")).is_absolute());
    }
}
