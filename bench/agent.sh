#!/usr/bin/env bash
# Whole-process agent benchmark (issue 4): etch against a local
# OpenAI-compatible server that answers at once (a small Python server
# started here), in one run:
#   - `-p` with one request: wall time and peak RSS (targets 15 ms, 15 MiB)
#   - each extra tool round, a `bash` call running `echo hi` (target 8 ms)
#   - 512 KB of streamed text: wall time and peak RSS (targets 30 ms, 20 MiB)
# For reference, on this machine Pi needs 1412 ms for one request and 65 ms
# per round, Codex CLI 375 ms and 83 ms.
#
# Usage: bench/agent.sh [RUNS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
if [ ! -x /usr/bin/time ]; then
  apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
fi
. bench/lib.sh
python3 - "$etch" "$port" "$runs" "$bench_dir" <<'PY'
import subprocess, sys
etch, port, runs, bench_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def cmd(scenario):
    return timing.etch_cmd(etch, port, scenario)

sys.path.insert(0, bench_dir)
import timing

def median_ms(argv):
    return timing.median_ms(argv, runs)

def peak_mib(argv):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, check=True)
    return int(out.stderr.strip().splitlines()[-1]) / 1024

one = median_ms(cmd("text"))
r1 = median_ms(cmd("rounds-1"))
r11 = median_ms(cmd("rounds-11"))
big = median_ms(cmd("big"))
shell = median_ms(["bash", "-lc", "echo hi"])
per_round = (r11 - r1) / 10
print(f"runs per figure:              {runs}")
print(f"-p, one request:              {one:7.2f} ms  peak {peak_mib(cmd('text')):5.1f} MiB  (targets 15 ms, 15 MiB; Pi 1412 ms, Codex 375 ms)")
print(f"per extra tool round (bash):  {per_round:7.2f} ms  (1 round {r1:.2f} ms, 11 rounds {r11:.2f} ms; target 8 ms; Pi 65 ms, Codex 83 ms)")
print(f"  of which bash -lc 'echo hi': {shell:7.2f} ms  (the login shell itself, measured alone)")
print(f"  harness cost per round:     {per_round - shell:7.2f} ms")
print(f"512 KB streamed text:         {big:7.2f} ms  peak {peak_mib(cmd('big')):5.1f} MiB  (targets 30 ms, 20 MiB)")
PY
