#!/usr/bin/env bash
# Hook cost benchmark (issue 14): etch against the local bench server
# (bench/server.py) with one call of the in-process `ls` tool per round
# (so a round costs little but etch itself), in one run:
#   - no hooks at all (the reference)
#   - one no-op PreToolUse hook (`true`) on every call
#   - ten PreToolUse hooks whose matcher never matches, plus hooks on
#     other tools' names: they must cost nothing measurable
# Each figure is the median time per extra tool round (41 rounds minus 1
# round, over 40), so process start-up cancels out; the cost of one hook
# is printed beside `sh -c true` measured alone, which is its floor.
#
# Usage: bench/hooks.sh [RUNS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
. bench/lib.sh
mkdir -p "$HOME/.etch"
python3 - "$etch" "$port" "$runs" "$HOME/.etch/config.toml" <<'PY'
import statistics, subprocess, sys, time
etch, port, runs, config = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def cmd(scenario):
    return [etch, "--provider", "openai", "--api-key", "unused", "--model", "bench",
            "--base-url", f"http://127.0.0.1:{port}/{scenario}/v1", "--max-tool-rounds", "64",
            "-p", "go"]

def median_ms(argv):
    for _ in range(3):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)

def per_round(hooks):
    with open(config, "w") as f:
        f.write(hooks)
    return (median_ms(cmd("ls-rounds-41")) - median_ms(cmd("ls-rounds-1"))) / 40

none = per_round("")
noop = per_round('[[hooks.PreToolUse]]\ncommand = "true"\n')
unmatched = per_round("".join(
    f'[[hooks.PreToolUse]]\nmatcher = "nothing_{i}"\ncommand = "true"\n\n' for i in range(10)
) + '[[hooks.PostToolUse]]\nmatcher = "read|write|edit"\ncommand = "true"\n')
sh = median_ms(["sh", "-c", "true"])
print(f"runs per figure:                      {runs}")
print(f"per tool round, no hooks:             {none:7.2f} ms  (reference)")
print(f"per tool round, one no-op PreToolUse: {noop:7.2f} ms  (+{noop - none:.2f} ms per hook run, {noop / none:.2f}x)")
print(f"  sh -c true alone:                   {sh:7.2f} ms  (the floor of any hook run)")
print(f"per tool round, 11 unmatched hooks:   {unmatched:7.2f} ms  ({unmatched - none:+.2f} ms, {unmatched / none:.2f}x)")
PY
