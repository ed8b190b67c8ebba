#!/usr/bin/env bash
# Whole-process benchmark of `etch acp` (issue 18) against the local
# OpenAI-compatible server of bench/server.py, beside `etch rpc` for the
# same prompt in the same run. In a running session (initialize and
# session/new done; warm-up prompts first), from the prompt written:
#   - `etch acp`: to the first session/update of the turn, and to the
#     session/prompt answer (stopReason)
#   - `etch rpc`: to the run's first event (agent_start) and to agent_end
# "ACP adds" is the difference of the two ends.
#
# Usage: bench/acp.sh [RUNS]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
. bench/lib.sh
mkdir -p "$HOME/.etch"
printf '[acp]\nask = []\n' > "$HOME/.etch/config.toml"
python3 - "$etch" "$port" "$runs" "$PWD" "$bench_dir" <<'PY'
import json, statistics, subprocess, sys, time
etch, port, runs, cwd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, sys.argv[5])
from timing import read_until, rpc_turns
flags = ["--provider", "openai", "--api-key", "unused", "--model", "bench",
         "--base-url", f"http://127.0.0.1:{port}/text/v1"]

def acp(count):
    """One session: prompt to the first update, and to the answer."""
    p = subprocess.Popen([etch, "acp", *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
    send = lambda m: (p.stdin.write(json.dumps(m) + "\n"), p.stdin.flush())
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    read_until(p, lambda v: v.get("id") == 1)
    send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})
    session = read_until(p, lambda v: v.get("id") == 2)["result"]["sessionId"]
    firsts, ends = [], []
    for i in range(count + 3):
        rid = 10 + i
        t = time.perf_counter()
        send({"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
              "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})
        read_until(p, lambda v: v.get("method") == "session/update"
                   and v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        first = time.perf_counter() - t
        read_until(p, lambda v: v.get("id") == rid)
        end = time.perf_counter() - t
        if i >= 3:
            firsts.append(first * 1000); ends.append(end * 1000)
    p.stdin.close()
    p.wait()
    return firsts, ends

med = statistics.median
a_first, a_end, r_first, r_end = [], [], [], []
# Alternate rounds so machine noise hits both alike.
for _ in range(3):
    f, e = acp(max(runs // 3, 1)); a_first += f; a_end += e
    _, f, e = rpc_turns(etch, flags, max(runs // 3, 1)); r_first += f; r_end += e
print(f"prompts per figure:                 {len(a_end)}")
print(f"acp, prompt to first update:        {med(a_first):7.2f} ms")
print(f"acp, prompt to answer:              {med(a_end):7.2f} ms")
print(f"rpc, prompt to agent_start:         {med(r_first):7.2f} ms")
print(f"rpc, prompt to agent_end:           {med(r_end):7.2f} ms")
print(f"acp adds (answer - agent_end):      {med(a_end) - med(r_end):7.2f} ms  (ratio {med(a_end) / med(r_end):.3f})")
PY
