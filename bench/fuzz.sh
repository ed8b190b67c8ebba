#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ (issue 37) for SECONDS each and
# prints, per target, the executions and the crashes. Each target's
# corpus starts from its seeds (fuzz/seeds/TARGET) and grows in
# fuzz/corpus/TARGET (not committed); a crashing input is copied to
# fuzz/regressions/TARGET/, which the stable test suite replays
# (crates/etch-fuzz/tests/replay.rs), so a crash found once stays fixed.
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# Usage: bench/fuzz.sh [SECONDS] [TARGET...]   (default 600 s, every target)
# FUZZ_SANITIZER=none runs without AddressSanitizer (cargo-fuzz's
# default, kept here): etch forbids unsafe code, so it watches only its
# dependencies' unsafe code, and without it a target runs two to three
# times as many inputs.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-600}"
shift || true
if ! cargo +nightly fuzz --help >/dev/null 2>&1; then
  echo "bench/fuzz.sh needs nightly Rust and cargo-fuzz: rustup toolchain install nightly; cargo install cargo-fuzz" >&2
  exit 2
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
sanitizer="${FUZZ_SANITIZER:-address}"
cargo +nightly fuzz build -O -s "$sanitizer" >/dev/null
printf '%-16s %14s %8s %10s\n' target executions crashes exec/s
total_crashes=0
for target in "${targets[@]}"; do
  # Artifacts of earlier runs are in fuzz/regressions already.
  rm -rf "artifacts/$target"
  mkdir -p "corpus/$target" "artifacts/$target"
  log="$(mktemp)"
  set +e
  cargo +nightly fuzz run -O -s "$sanitizer" "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1
  set -e
  runs="$(grep -o '^stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  rate="$(grep -o '^stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  crashes=0
  for found in artifacts/"$target"/crash-* artifacts/"$target"/oom-* artifacts/"$target"/timeout-*; do
    [ -e "$found" ] || continue
    crashes=$((crashes + 1))
    mkdir -p "regressions/$target"
    cp "$found" "regressions/$target/"
  done
  total_crashes=$((total_crashes + crashes))
  printf '%-16s %14s %8s %10s\n' "$target" "$runs" "$crashes" "$rate"
  if [ "$crashes" -gt 0 ]; then
    grep -m 3 -E 'panicked|ERROR: libFuzzer' "$log" | sed 's/^/    /' || true
  fi
  rm -f "$log"
done
echo "${#targets[@]} targets, $total_crashes crashes (each copied to fuzz/regressions/TARGET/)"
