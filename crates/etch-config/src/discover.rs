//! Finds the config files (E-CFG-01): the user file `~/.etch/config.toml`
//! and the project file, the nearest `.etch/config.toml` from the cwd up to
//! the filesystem root.
//!
//! This module owns file locations only. It must not read or parse files.

use std::path::{Path, PathBuf};

/// The directory holding etch's files, in the home and in projects.
pub(crate) const ETCH_DIR: &str = ".etch";
/// The config file's name inside [`ETCH_DIR`].
pub(crate) const CONFIG_FILE: &str = "config.toml";

/// The config files that exist, lowest precedence first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigFiles {
    /// `~/.etch/config.toml`, when it exists.
    pub user: Option<PathBuf>,
    /// The nearest `.etch/config.toml` above the cwd, when it exists and is
    /// not the user file itself.
    pub project: Option<PathBuf>,
}

/// Looks for the user file under `home` and the project file from `cwd`
/// upward. A relative `cwd` is taken relative to the process's directory.
/// When the nearest `.etch/config.toml` is the user file (the cwd is inside
/// the home and no project has its own), there is no project file: the same
/// file must not count twice, or its hooks would run twice.
pub fn discover(cwd: &Path, home: Option<&Path>) -> ConfigFiles {
    let user = home.map(config_in).filter(|path| path.is_file());
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let project = cwd
        .ancestors()
        .map(config_in)
        .find(|path| path.is_file())
        .filter(|path| !user.as_deref().is_some_and(|user| same_file(user, path)));
    ConfigFiles { user, project }
}

/// `dir/.etch/config.toml`.
fn config_in(dir: &Path) -> PathBuf {
    dir.join(ETCH_DIR).join(CONFIG_FILE)
}

/// Whether two paths name the same file, through symlinks when possible.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The project root for a project config file: the directory holding its
/// `.etch/` (E-CFG-21). A file outside a `.etch/` directory (possible through
/// [`load_files`](crate::load_files)) roots at its own directory.
pub(crate) fn project_root(project_file: &Path) -> Option<PathBuf> {
    let dir = project_file.parent()?;
    if dir.file_name().is_some_and(|name| name == ETCH_DIR) {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// Creates `dir/.etch/config.toml` with empty contents.
    fn make_config(dir: &Path) -> PathBuf {
        let path = config_in(dir);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, "").expect("write");
        path
    }

    /// The nearest project file wins, found from a nested cwd.
    #[test]
    fn finds_nearest_project_file_from_nested_cwd() {
        let temp = tempfile::tempdir().expect("tempdir");
        let outer = make_config(temp.path());
        let project = temp.path().join("work/project");
        let inner = make_config(&project);
        let nested = project.join("src/deep");
        fs::create_dir_all(&nested).expect("mkdir");

        let files = discover(&nested, None);
        assert_eq!(files.project, Some(inner.clone()));
        assert_eq!(files.user, None);
        assert_eq!(project_root(&inner), Some(project));

        let files = discover(&temp.path().join("work"), None);
        assert_eq!(files.project, Some(outer));
    }

    /// The user file is found in the home and never doubles as the project.
    #[test]
    fn user_file_is_not_also_the_project_file() {
        let temp = tempfile::tempdir().expect("tempdir");
        let home = temp.path().join("home");
        let user = make_config(&home);
        let cwd = home.join("code/app");
        fs::create_dir_all(&cwd).expect("mkdir");

        let files = discover(&cwd, Some(&home));
        assert_eq!(
            files,
            ConfigFiles {
                user: Some(user.clone()),
                project: None
            }
        );

        let project = make_config(&cwd);
        let files = discover(&cwd, Some(&home));
        assert_eq!(
            files,
            ConfigFiles {
                user: Some(user),
                project: Some(project)
            }
        );
    }

    /// Missing files and a `.etch` directory without a config are absent.
    #[test]
    fn absent_files_are_none() {
        let temp = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(temp.path().join(".etch/config.toml/not-a-file")).expect("mkdir");
        let files = discover(temp.path(), Some(&temp.path().join("nohome")));
        assert_eq!(files.user, None);
        assert_ne!(files.project, Some(config_in(temp.path())));
    }

    /// A project file outside `.etch/` roots at its own directory.
    #[test]
    fn project_root_without_etch_dir() {
        assert_eq!(
            project_root(Path::new("/x/custom.toml")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            project_root(Path::new("/p/.etch/config.toml")),
            Some(PathBuf::from("/p"))
        );
    }
}
