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
python3 - "$etch" "$port" "$runs" "$HOME/.etch/config.toml" "$bench_dir" <<'PY'
import sys
etch, port, runs, config, bench_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]

def cmd(scenario):
    return timing.etch_cmd(etch, port, scenario, extra=("--max-tool-rounds", "64"))

sys.path.insert(0, bench_dir)
import timing

def median_ms(argv):
    return timing.median_ms(argv, runs)

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
