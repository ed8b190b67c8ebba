//! In-process tool benchmarks (issue 3 targets): `edit` of a 10 MB file
//! under 50 ms, and `read` of the first 2000 lines of a 1 GB file under
//! 20 ms (its memory is measured by `bench/read-memory.sh`, whole process).
//! The diff a `write` returns for a 4 MB file whose every line changed
//! (bounded by `diff::DIFF_DEADLINE`; it once took a minute), beside the
//! diff of the same file with one line changed, the reference.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::missing_docs_in_private_items
)]

use std::hint::black_box;
use std::io::Write;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use etch_tool::{ProgressSink, Tool, ToolContext};
use etch_tools::edit::EditTool;
use etch_tools::lock::MutationLocks;
use etch_tools::read::ReadTool;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn ctx(cwd: &Path) -> ToolContext {
    ToolContext {
        call_id: "bench".into(),
        cwd: cwd.to_path_buf(),
        cancel: CancellationToken::new(),
        progress: ProgressSink::default(),
        temp_dir: cwd.join("tmp"),
        origin: etch_tool::CallOrigin::default(),
        approved: false,
    }
}

/// A line of code-like text, about 60 bytes.
const LINE: &str = "    let total = items.iter().map(|x| x.weight).sum::<u64>();\n";

fn bench_edit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let lines = 10 * 1024 * 1024 / LINE.len();
    let mut text = LINE.repeat(lines / 2);
    text.push_str("    // MARKER_A\n");
    text.push_str(&LINE.repeat(lines / 2));
    std::fs::write(dir.path().join("big.rs"), &text).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tool = EditTool::new(MutationLocks::new());
    let mut flip = false;
    c.bench_function("edit_10mb_file", |b| {
        b.iter(|| {
            let (from, to) = if flip { ("MARKER_B", "MARKER_A") } else { ("MARKER_A", "MARKER_B") };
            flip = !flip;
            let args = json!({"path": "big.rs", "edits": [{"oldText": format!("// {from}"), "newText": format!("// {to}")}]});
            let out = rt.block_on(tool.execute(args, ctx(dir.path()))).unwrap();
            black_box(out.text.len())
        });
    });
}

fn bench_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.log");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let chunk = LINE.repeat(16 * 1024);
    let mut written = 0usize;
    while written < 1024 * 1024 * 1024 {
        file.write_all(chunk.as_bytes()).unwrap();
        written += chunk.len();
    }
    file.flush().unwrap();
    drop(file);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tool = ReadTool::new();
    c.bench_function("read_first_2000_lines_of_1gb_file", |b| {
        b.iter(|| {
            let out = rt
                .block_on(tool.execute(json!({"path": "huge.log"}), ctx(dir.path())))
                .unwrap();
            black_box(out.text.len())
        });
    });
}

fn bench_diff(c: &mut Criterion) {
    let lines = 4 * 1024 * 1024 / LINE.len();
    let old: String = (0..lines).map(|i| format!("{i:08} {LINE}")).collect();
    let rewritten: String = (0..lines).map(|i| format!("{i:08}+{LINE}")).collect();
    let one_line = old.replacen("00001000 ", "00001000+", 1);
    let mut group = c.benchmark_group("diff_of_4mb_file");
    group.sample_size(10);
    group.bench_function("one_line_changed", |b| {
        b.iter(|| black_box(etch_tools::diff::unified(&old, &one_line, "big.rs").len()));
    });
    group.bench_function("every_line_changed", |b| {
        b.iter(|| black_box(etch_tools::diff::unified(&old, &rewritten, "big.rs").len()));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_edit, bench_read, bench_diff
}
criterion_main!(benches);
