#!/usr/bin/env bash
# Subagent benchmark (issue 17): etch against the local bench server
# (bench/server.py), in one run:
#   - the overhead of a task call whose child answers at once: `-p`
#     with one task call (parent, child, parent: three requests) against
#     the same parent doing one `ls` round (two requests), less one
#     request's cost (measured as one more `ls` round): what starting a
#     child run in-process costs; target under 5 ms
#   - four children in parallel whose answers each take 200 ms, against
#     one such child: about the same time when they overlap
#
# Usage: bench/subagents.sh [RUNS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
repo="$PWD"
. bench/lib.sh
mkdir -p "$HOME/.etch"
cat > "$HOME/.etch/config.toml" <<'TOML'
[subagents]
enabled = true
max_concurrent = 4

[[subagents.profile]]
name = "bench"
description = "Answers at once."
model = "child"
allowed_tools = ["read"]
TOML
python3 - "$etch" "$port" "$runs" "$repo/bench" <<'PY'
import sys
etch, port, runs, bench_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, bench_dir)
import timing

def ms(scenario):
    return timing.median_ms(timing.etch_cmd(etch, port, scenario), runs)

ls1, ls2, task1 = ms("ls-rounds-1"), ms("ls-rounds-2"), ms("task-1")
request = ls2 - ls1
child = task1 - ls1 - request
one, four = ms("slowtask-1"), ms("slowtask-4")
print(f"runs per figure:                         {runs}")
print(f"-p with one ls round (reference):        {ls1:7.2f} ms")
print(f"one more round (a request and a tool):   {request:7.2f} ms")
print(f"-p with one task call:                   {task1:7.2f} ms  (child start-up {child:+.2f} ms beyond its request; target under 5 ms)")
print(f"one child answering in 200 ms:           {one:7.2f} ms")
print(f"four such children in parallel:          {four:7.2f} ms  ({four / one:.2f}x one)")
PY
