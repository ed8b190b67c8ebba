#!/usr/bin/env bash
# Whole-process benchmark of `etch rpc` (issue 11) against the local
# OpenAI-compatible server of bench/server.py, beside `-p --json` in the
# same run:
#   - `-p --json`: process start to its first line, and to the result line
#   - `etch rpc`, cold: process start plus one prompt line, to the first
#     event of the run and to `agent_end`
#   - `etch rpc`, warm: in a running session, the prompt line written to
#     its acknowledgement, the first event and `agent_end`
# "RPC adds" is cold RPC to agent_end minus `-p --json` to its result
# (target: under 1 ms).
#
# Usage: bench/rpc.sh [RUNS]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
. bench/lib.sh
python3 - "$etch" "$port" "$runs" "$bench_dir" <<'PY'
import json, statistics, subprocess, sys, time
etch, port, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from timing import read_until, rpc_turns
flags = ["--provider", "openai", "--api-key", "unused", "--model", "bench",
         "--base-url", f"http://127.0.0.1:{port}/text/v1"]

def print_mode():
    """Start to first line, start to result line, of `etch --json -p`."""
    t = time.perf_counter()
    p = subprocess.Popen([etch, *flags, "--json", "-p", "go"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    first = time.perf_counter() - t
    for line in p.stdout:
        if json.loads(line).get("type") == "result":
            break
    done = time.perf_counter() - t
    p.wait()
    return first * 1000, done * 1000

def rpc_cold():
    """Start plus a prompt line, to the run's first event and to agent_end."""
    t = time.perf_counter()
    p = subprocess.Popen([etch, "rpc", *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
    p.stdin.write('{"id":"1","type":"prompt","message":"go"}\n')
    p.stdin.flush()
    read_until(p, lambda v: v.get("type") == "agent_start")
    first = time.perf_counter() - t
    read_until(p, lambda v: v.get("type") == "agent_end")
    done = time.perf_counter() - t
    p.stdin.close()
    p.wait()
    return first * 1000, done * 1000

# Interleave the two cold measurements so machine noise hits both alike.
p_first, p_done, r_first, r_done = [], [], [], []
for _ in range(3):
    print_mode(); rpc_cold()
for _ in range(runs):
    a, b = print_mode(); p_first.append(a); p_done.append(b)
    a, b = rpc_cold(); r_first.append(a); r_done.append(b)
med = statistics.median
acks, firsts, ends = rpc_turns(etch, flags, runs)
ack, first, end = med(acks), med(firsts), med(ends)
print(f"runs per figure:                    {runs}")
print(f"-p --json, start to first line:     {med(p_first):7.2f} ms")
print(f"-p --json, start to result line:    {med(p_done):7.2f} ms")
print(f"rpc cold, start to agent_start:     {med(r_first):7.2f} ms")
print(f"rpc cold, start to agent_end:       {med(r_done):7.2f} ms")
print(f"rpc adds (cold agent_end - -p):     {med(r_done) - med(p_done):7.2f} ms  (target < 1 ms; ratio {med(r_done) / med(p_done):.3f})")
print(f"rpc warm, prompt to ack:            {ack:7.2f} ms")
print(f"rpc warm, prompt to agent_start:    {first:7.2f} ms")
print(f"rpc warm, prompt to agent_end:      {end:7.2f} ms")
PY
