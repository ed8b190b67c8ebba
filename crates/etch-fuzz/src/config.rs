//! `config`: arbitrary bytes as a project's `.etch/config.toml`. Loading
//! never panics; a file that loads with no errors gives an effective
//! TOML (what `etch config show --effective` prints) that loads clean
//! and prints the same values again (its provenance comments aside:
//! what was a default is then written in the file).

use std::path::{Path, PathBuf};

use etch_config::{ConfigFiles, load_files};

/// The effective TOML of `text` as the project file in `dir`, without
/// its provenance comments, when it loads with no errors.
fn effective(dir: &Path, text: &[u8]) -> Option<String> {
    let file = dir.join(".etch").join("config.toml");
    std::fs::write(&file, text).ok()?;
    let loaded = load_files(
        ConfigFiles {
            user: None,
            project: Some(PathBuf::from(".etch/config.toml")),
        },
        dir,
    );
    if loaded.has_errors() {
        return None;
    }
    let from = format!("  # from {}", file.display());
    let values = loaded
        .effective_toml()
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            // "  # default", "  # default: why", "  # from FILE".
            let comment = line
                .find("  # default")
                .or_else(|| line.strip_suffix(from.as_str()).map(str::len));
            comment.map_or(line, |at| &line[..at]).to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n");
    Some(values)
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some(dir) = crate::scratch::dir() else {
        return;
    };
    if std::fs::create_dir_all(dir.path().join(".etch")).is_err() {
        return;
    }
    let Some(first) = effective(dir.path(), data) else {
        return;
    };
    match effective(dir.path(), first.as_bytes()) {
        Some(second) => assert_eq!(second, first, "the effective configuration is no fixpoint"),
        None => panic!("the effective configuration does not load clean:\n{first}"),
    }
}
