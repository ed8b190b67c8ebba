//! What a push costs before each model request (issue 33 target: under
//! 1 ms with 16 chatty processes): `Table::take_update` while 16
//! processes print as fast as they can, each call after a pause in which
//! every one of them printed far more than a push takes (the worst case:
//! all 16 have news), beside the same call with 16 quiet ones (the
//! reference), in the same run; the ratio is printed at the end.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::missing_docs_in_private_items
)]

use std::hint::black_box;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use etch_process::{Limits, Start, Table};

/// A table whose guard runs the command as is (the real guard is the
/// etch binary's; its start is not what is measured here).
fn table(dir: &tempfile::TempDir) -> Arc<Table> {
    let guard = dir.path().join("guard.sh");
    std::fs::write(&guard, "#!/bin/sh\nshift 3\nexec \"$@\"\n").unwrap();
    std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
    Table::new(guard, dir.path().join("tmp"), Limits::default())
}

/// Starts 16 processes running `script`.
fn start_16(table: &Arc<Table>, script: &str) {
    for _ in 0..16 {
        table
            .start(Start {
                command: script.to_owned(),
                program: "sh".into(),
                args: vec!["-c".into(), script.into()],
                cwd: std::env::temp_dir(),
                env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
            })
            .unwrap();
    }
}

/// The pause before each measured call, in which the processes print.
const PAUSE: Duration = Duration::from_millis(3);

/// The time `n` calls of `take_update` took, each after [`PAUSE`].
fn timed(table: &Table, n: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..n {
        std::thread::sleep(PAUSE);
        let started = Instant::now();
        black_box(table.take_update());
        total += started.elapsed();
    }
    total
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let (chatty_dir, quiet_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let chatty = table(&chatty_dir);
    let quiet = table(&quiet_dir);
    start_16(
        &chatty,
        "while :; do echo 'GET /api/items 200 3.2ms user=42 cache=hit'; done",
    );
    start_16(&quiet, "sleep 600");
    // Let the rings fill.
    std::thread::sleep(Duration::from_millis(500));
    let mut c = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    c.bench_function("push_16_chatty", |b| b.iter_custom(|n| timed(&chatty, n)));
    c.bench_function("push_16_quiet", |b| b.iter_custom(|n| timed(&quiet, n)));
    let (loud, calm) = (timed(&chatty, 300) / 300, timed(&quiet, 300) / 300);
    println!(
        "push with 16 chatty processes: {:.1} µs per request (target < 1000 µs); with 16 quiet ones: {:.1} µs; ratio {:.1}x",
        loud.as_secs_f64() * 1e6,
        calm.as_secs_f64() * 1e6,
        loud.as_secs_f64() / calm.as_secs_f64().max(1e-9)
    );
    c.final_summary();
    rt.block_on(async {
        chatty.close().await;
        quiet.close().await;
    });
}
