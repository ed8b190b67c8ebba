//! Prompt assembly and token estimation benchmarks.
//!
//! `assemble`: a generated project 20 directories deep, each level holding a
//! ~2 KB AGENTS.md, a SYSTEM.md at the top and bottom, and 200 valid skills
//! spread over the 40 project skill roots and the global root (target: under
//! 5 ms). `tokens`: the estimator over ~10 MB of mixed code, prose, JSON and
//! non-ASCII text, reported as throughput.
#![allow(missing_docs, clippy::unwrap_used)]

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use etch_prompt::{PromptInputs, assemble, tokens};

/// Nesting depth of the generated project.
const DEPTH: usize = 20;

/// Number of skills spread over the roots.
const SKILLS: usize = 200;

/// Writes `text` to `path`, creating parents.
fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Lays out the project under `base`; returns (cwd, home).
fn generate(base: &Path) -> (PathBuf, PathBuf) {
    let home = base.join("home");
    let mut dirs = vec![base.join("project")];
    for i in 1..DEPTH {
        let next = dirs[i - 1].join(format!("level{i}"));
        dirs.push(next);
    }
    let rules = "- Keep functions small and documented; run the tests before committing.\n";
    let agents = rules.repeat(2048 / rules.len() + 1);
    for dir in &dirs {
        write(&dir.join("AGENTS.md"), &agents);
    }
    write(&dirs[0].join("SYSTEM.md"), "You maintain this project.\n");
    write(
        &dirs[DEPTH - 1].join("SYSTEM.md"),
        "You own the innermost package.\n",
    );
    let mut roots: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| [d.join(".etch/skills"), d.join(".agents/skills")])
        .collect();
    roots.push(home.join(".etch/skills"));
    for i in 0..SKILLS {
        let name = format!("skill-{i:03}");
        let root = &roots[i % roots.len()];
        let body = "Step: do the thing carefully.\n".repeat(60);
        write(
            &root.join(&name).join("SKILL.md"),
            &format!(
                "---\nname: {name}\ndescription: \"Use when the task needs {name}: it explains the \
                 workflow, the commands and the checks.\"\nlicense: MIT\n---\n\n# {name}\n\n{body}"
            ),
        );
    }
    write(&home.join(".etch/AGENTS.md"), "Global rules.\n");
    (dirs[DEPTH - 1].clone(), home)
}

/// ~10 MB of mixed text: Rust code, English prose, JSON and non-ASCII text.
fn mixed_text() -> String {
    let pieces = [
        "    let value = compute(\"input\", 42)?; // keep the old_behaviour\n",
        "The quick brown fox jumps over the lazy dog while the tests keep running.\n",
        "{\"path\":\"src/main.rs\",\"offset\":120,\"limit\":2000,\"ok\":true}\n",
        "Grüße aus Köln — naïve café, 日本語のテキスト, emoji 🚀 done.\n",
    ];
    let block: String = pieces.concat();
    block.repeat(10 * 1024 * 1024 / block.len() + 1)
}

/// Both benchmarks; the project is generated once, outside the timing.
fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let (cwd, home) = generate(tmp.path());
    let tools = ["bash", "edit", "find", "grep", "ls", "read", "write"];
    let inputs = PromptInputs {
        cwd: &cwd,
        home: Some(&home),
        tools: &tools,
        prompt_text: Some("Prefer small diffs."),
        date: "2026-01-02",
        compact: false,
    };
    let check = assemble(&inputs);
    assert_eq!(check.skills.len(), SKILLS);
    assert_eq!(check.instruction_files.len(), DEPTH + 1);
    assert!(check.diagnostics.is_empty(), "{:?}", check.diagnostics);
    c.bench_function("assemble 20 levels, 200 skills", |b| {
        b.iter(|| black_box(assemble(black_box(&inputs))));
    });

    let text = mixed_text();
    let mut group = c.benchmark_group("estimate");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("tokens ~10 MB mixed", |b| {
        b.iter(|| tokens(black_box(&text)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
