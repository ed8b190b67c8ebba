//! Every seed and every input a fuzzer crashed on, run through its
//! target's check on stable Rust: `fuzz/seeds/TARGET/` and
//! `fuzz/regressions/TARGET/` (a crash found by `bench/fuzz.sh` is
//! copied there, so it stays fixed).

#![allow(clippy::panic, clippy::unwrap_used)]

use std::path::Path;

/// The inputs of `target` under `kind`.
fn inputs(kind: &str, target: &str) -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_regression_passes_its_check() {
    let mut ran = 0;
    for (target, check) in etch_fuzz::TARGETS {
        let seeds = inputs("seeds", target);
        assert!(
            !seeds.is_empty(),
            "{target} has no seeds under fuzz/seeds/{target}"
        );
        for file in seeds.iter().chain(inputs("regressions", target).iter()) {
            let data = std::fs::read(file).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(
                outcome.is_ok(),
                "{target}: {} fails its check",
                file.display()
            );
            ran += 1;
        }
    }
    assert!(ran >= etch_fuzz::TARGETS.len());
}
