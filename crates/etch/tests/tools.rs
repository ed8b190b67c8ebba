//! `etch tool <name>` end to end (E-CLI-11, E-TOOL-21): each subcommand
//! prints exactly the text the model gets, `tool error: ...` with exit 1 on
//! failure, and validation of limits matches the model path. Also `--tools`
//! and `--read-only` (C1).

mod support;

use support::{Workspace, jsonl};

/// read, write, edit and ls through the CLI, with their exact contract text.
#[test]
fn file_tools_print_model_text() {
    let ws = Workspace::new();
    let out = ws
        .run(&[
            "tool",
            "write",
            "--content",
            "hello\nworld\n",
            "notes/hello.txt",
        ])
        .ok();
    assert_eq!(out, "Successfully wrote 12 bytes to notes/hello.txt\n");
    let out = ws.run(&["tool", "read", "notes/hello.txt"]).ok();
    assert_eq!(out, "     1\thello\n     2\tworld\n");
    let out = ws
        .run(&[
            "tool",
            "read",
            "--offset",
            "2",
            "--limit",
            "1",
            "notes/hello.txt",
        ])
        .ok();
    assert_eq!(out, "     2\tworld\n");
    let out = ws
        .run(&[
            "tool",
            "edit",
            "--old",
            "hello",
            "--new",
            "goodbye",
            "notes/hello.txt",
        ])
        .ok();
    assert!(
        out.starts_with(
            "Successfully replaced 1 block(s) in notes/hello.txt.\n\n--- a/notes/hello.txt\n"
        ),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes/hello.txt")).unwrap(),
        "goodbye\nworld\n"
    );
    let out = ws.run(&["tool", "ls"]).ok();
    assert_eq!(out, "notes/\n\n[1 entry: 1 directory, 0 files.]\n");
}

/// Failures print `tool error: ...` on stdout and exit 1; the file is
/// untouched.
#[test]
fn tool_errors_exit_1() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("f.txt"), "same same\n").unwrap();
    let run = ws.run(&["tool", "edit", "--old", "same", "--new", "x", "f.txt"]);
    assert_eq!(run.code(), 1);
    assert_eq!(
        run.stdout(),
        "tool error: edits[0].oldText matches 2 places in f.txt; make it match exactly one by \
         including more of the surrounding text, or give one edit per place:\n  line 1: same same\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
        "same same\n"
    );
    let run = ws.run(&["tool", "read", "missing.txt"]);
    assert_eq!(run.code(), 1);
    assert_eq!(
        run.stdout(),
        "tool error: missing.txt does not exist; use ls or find to see which files there are\n"
    );
    let run = ws.run(&["tool", "write", "--content", "x", "../outside.txt"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stdout().contains("outside the working directory"),
        "{}",
        run.stdout()
    );
}

/// Limits of 0 or below get the same validation error as a model call.
#[test]
fn zero_and_negative_limits() {
    let ws = Workspace::new();
    for args in [
        vec!["tool", "ls", "--limit", "0"],
        vec!["tool", "read", "--limit", "-2", "x"],
        vec!["tool", "find", "--limit", "0", "x"],
        vec!["tool", "grep", "--limit", "-1", "x"],
        vec!["tool", "bash", "--timeout", "0", "--", "true"],
    ] {
        let run = ws.run(&args);
        assert_eq!(run.code(), 1, "{args:?}");
        assert!(
            run.stdout()
                .starts_with("tool error: Validation failed for tool"),
            "{args:?}: {}",
            run.stdout()
        );
    }
}

/// grep, find and bash through the CLI.
#[test]
fn search_and_bash_tools() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    std::fs::write(
        ws.path().join("src/lib.rs"),
        "fn alpha() {}\nfn beta() {}\n",
    )
    .unwrap();
    assert_eq!(
        ws.run(&["tool", "grep", "beta", "src"]).ok(),
        "src/lib.rs:2:fn beta() {}\n\n[1 matching line in 1 file.]\n"
    );
    assert_eq!(
        ws.run(&["tool", "grep", "zeta", "."]).ok(),
        "No matches found\n\n[Searched the contents of the files under . for the literal text \"zeta\". \
         grep looks inside files: to find a file by its name use find, to see a file use read.]\n"
    );
    assert_eq!(ws.run(&["tool", "find", "LIB", "."]).ok(), "src/lib.rs\n");
    assert_eq!(
        ws.run(&["tool", "bash", "--", "echo", "hi;", "exit", "3"])
            .ok(),
        "hi\nCommand exited with code 3\n"
    );
}

/// C1: `--read-only` offers read, grep, find, ls; `--tools` selects; an
/// unknown name is a usage error. The echo model's metrics count the schemas.
#[test]
fn tool_selection_flags() {
    let ws = Workspace::new();
    ws.run(&["--read-only", "-p", "x"]).ok();
    ws.run(&["--tools", "read,bash", "-p", "y"]).ok();
    ws.run(&["-p", "z"]).ok();
    let counts: Vec<u64> = ws
        .session_files()
        .iter()
        .map(|p| {
            let events = jsonl(p);
            events.last().unwrap()["data"]["toolSchemas"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let mut sorted = counts.clone();
    sorted.sort_unstable();
    // `process` comes with `bash`.
    assert_eq!(sorted, [3, 4, 8]);
    let bad = ws.run(&["--tools", "read,teleport", "-p", "x"]);
    assert_eq!(bad.code(), 2);
    assert!(
        bad.stderr().contains("unknown tool \"teleport\""),
        "{}",
        bad.stderr()
    );
}
