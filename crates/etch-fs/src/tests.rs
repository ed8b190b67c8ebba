//! Tests of the two ways to write.

use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;

use super::*;

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The permission bits of `path`.
fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A new file as a filesystem without unnamed files makes it: under a
/// temporary name.
fn named(target: &Path) -> NewFile {
    let (temp, file) = named_temp(target, 0o600).unwrap();
    NewFile {
        file,
        target: target.to_path_buf(),
        mode: 0o600,
        temp: Some(temp),
    }
}

#[test]
fn replace_keeps_an_existing_mode_and_leaves_nothing_beside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.sh");
    std::fs::write(&path, "old").unwrap();
    // Set-user-id too: the write that clears it comes before the mode.
    std::fs::set_permissions(&path, Permissions::from_mode(0o4751)).unwrap();
    replace(&path, b"new", Options::keep_mode()).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(mode_of(&path), 0o4751);
    assert_eq!(names(dir.path()), ["run.sh"]);
}

#[test]
fn replace_creates_a_file_with_the_mode_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.json");
    replace(&path, b"{}", Options::mode(0o600).synced()).unwrap();
    assert_eq!(mode_of(&path), 0o600);
    // An exact mode replaces a looser one the file had.
    std::fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
    replace(&path, b"{ }", Options::mode(0o600)).unwrap();
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ }");
    assert_eq!(names(dir.path()), ["trust.json"]);
}

#[test]
fn a_new_file_keeping_modes_gets_what_open_gives() {
    let dir = tempfile::tempdir().unwrap();
    let made = dir.path().join("made.txt");
    std::fs::write(&made, "x").unwrap();
    let written = dir.path().join("written.txt");
    replace(&written, b"x", Options::keep_mode()).unwrap();
    assert_eq!(mode_of(&written), mode_of(&made));
}

#[test]
fn replace_puts_a_file_where_a_link_was() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("real"), "real").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink("real", &link).unwrap();
    replace(&link, b"new", Options::keep_mode()).unwrap();
    assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("real")).unwrap(),
        "real"
    );
}

#[test]
fn replace_into_a_missing_directory_fails_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let err = replace(&dir.path().join("no/such/file"), b"x", Options::keep_mode()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().starts_with("creating a file: "), "{err}");
}

#[test]
fn a_bare_name_is_replaced_in_the_current_directory() {
    assert_eq!(parent(Path::new("file.txt")), Path::new("."));
    assert_eq!(parent(Path::new("/a/b")), Path::new("/a"));
}

#[test]
fn a_new_file_has_no_name_until_published() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut new = NewFile::new(&path, 0o600).unwrap();
    new.file().write_all(b"header\n").unwrap();
    if makes_unnamed_files(dir.path()) {
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }
    let mut file = new.publish().unwrap();
    assert_eq!(names(dir.path()), ["s.jsonl"]);
    assert_eq!(mode_of(&path), 0o600);
    // The open file goes on being the named one, appending once asked.
    set_append(&file).unwrap();
    file.rewind().unwrap();
    let mut read = String::new();
    file.read_to_string(&mut read).unwrap();
    assert_eq!(read, "header\n");
    file.rewind().unwrap();
    file.write_all(b"more\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "header\nmore\n");
}

#[test]
fn a_new_file_dropped_unpublished_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut new = NewFile::new(&dir.path().join("s.jsonl"), 0o600).unwrap();
    new.file().write_all(b"half").unwrap();
    drop(new);
    assert!(names(dir.path()).is_empty());
}

#[test]
fn publishing_over_an_existing_name_fails_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, "theirs").unwrap();
    for unnamed in [true, false] {
        let mut new = if unnamed {
            NewFile::new(&path, 0o600).unwrap()
        } else {
            named(&path)
        };
        new.file().write_all(b"ours").unwrap();
        let err = new.publish().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs");
        assert_eq!(names(dir.path()), ["s.jsonl"]);
    }
    // A dangling link holds the name too.
    let link = dir.path().join("dangling");
    std::os::unix::fs::symlink("nowhere", &link).unwrap();
    let err = named(&link).publish().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
}

#[test]
fn the_named_fallback_cleans_up_after_itself() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("a");
    let mut new = named(&target);
    new.file().write_all(b"x").unwrap();
    let pid = std::process::id();
    assert_eq!(names(dir.path()), [format!(".a.etch-tmp-{pid}-0")]);
    new.publish().unwrap();
    assert_eq!(names(dir.path()), ["a"]);
    drop(named(&target));
    assert_eq!(names(dir.path()), ["a"]);
    let temp = named(&target).name_temporarily().unwrap();
    std::fs::rename(&temp.0, &target).unwrap();
    temp.forget();
    assert_eq!(names(dir.path()), ["a"]);
}

#[test]
fn an_unnamed_file_that_cannot_be_named_is_copied_to_a_named_one() {
    // What a /proc that refuses links leads to.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("s.jsonl");
    let mut new = NewFile::new(&target, 0o640).unwrap();
    new.file().write_all(b"header\nevent\n").unwrap();
    let copied = new.into_named().unwrap();
    assert_eq!(names(dir.path()).len(), 1);
    let mut file = copied.publish().unwrap();
    assert_eq!(names(dir.path()), ["s.jsonl"]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "header\nevent\n");
    // The file returned is the named one, its offset at the end.
    file.write_all(b"more\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "header\nevent\nmore\n"
    );
}

#[test]
fn temporary_names_skip_ones_taken() {
    let dir = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    let target = dir.path().join("f");
    std::fs::write(dir.path().join(format!(".f.etch-tmp-{pid}-0")), "").unwrap();
    let (temp, _) = named_temp(&target, 0o600).unwrap();
    assert!(
        temp.0.ends_with(format!(".f.etch-tmp-{pid}-1")),
        "{:?}",
        temp.0
    );
}
