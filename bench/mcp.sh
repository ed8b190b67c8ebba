#!/usr/bin/env bash
# MCP benchmark (issue 16): etch against the local bench server
# (bench/server.py) and the real server-everything (npm), in one run:
#   - one tool call round trip, per round (41 rounds minus 1, over 40,
#     so start-up cancels out): server-everything's `echo` through the
#     MCP bridge, beside the example plugin's `plugin_echo` and the
#     built-in `ls`
#   - from start to the MCP tools being available: `etch mcp bridge`
#     started, connected, initialized and its tools listed (what a
#     session waits for before the first MCP call), beside the same
#     server started and asked `initialize` + `tools/list` directly over
#     its stdio (the server's own start-up, mostly node; the bridge must
#     wait for initialize's answer before tools/list, the direct client
#     sends all at once), and the same pair with a small Python server
#     (tests/fixtures/mcp_server.py) whose start-up is fast, so the
#     difference is the bridge's own cost
#
# Usage: bench/mcp.sh [RUNS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
sh crates/etch/tests/mcp-servers/install.sh target/mcp-servers
everything="$PWD/target/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
cargo build --release --locked -q -p etch-plugin-example
example="$PWD/target/release/etch-plugin-example"
repo="$PWD"
. bench/lib.sh
mkdir -p "$HOME/.etch"
python3 - "$etch" "$port" "$runs" "$HOME/.etch/config.toml" "$example" "$everything" "$repo/bench" "$repo/crates/etch/tests/fixtures/mcp_server.py" <<'PY'
import json, os, statistics, subprocess, sys, time
etch, port, runs, config, example, everything, bench_dir, fixture = sys.argv[1:9]
runs = int(runs)
sys.path.insert(0, bench_dir)
import timing

def per_round(tool):
    def cmd(n):
        return timing.etch_cmd(etch, port, f"{tool}-rounds-{n}", extra=("--max-tool-rounds", "64"))
    return (timing.median_ms(cmd(41), runs) - timing.median_ms(cmd(1), runs)) / 40

with open(config, "w") as f:
    f.write(f'[[plugins]]\nname = "example"\ncommand = "{example}"\n\n'
            f'[[mcp.servers]]\nname = "everything"\ncommand = "node"\nargs = ["{everything}", "stdio"]\n')
ls = per_round("ls")
plugin = per_round("plugin")
mcp = per_round("mcp")

def first_answer(argv, requests, want_id):
    """ms from spawning argv to the line answering want_id."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for r in requests:
        p.stdin.write(json.dumps(r) + "\n")
    p.stdin.flush()
    for line in p.stdout:
        if json.loads(line).get("id") == want_id:
            break
    elapsed = (time.perf_counter() - t) * 1000
    p.stdin.close()
    p.kill()
    p.wait()
    return elapsed

def startup(server):
    """Medians of (bridge to tools available, server alone to tools/list) for argv `server`."""
    spec = json.dumps({"name": "s", "transport": {"kind": "stdio", "command": server[0], "args": server[1:]},
                       "timeoutSeconds": 30})
    bridge = [first_answer([etch, "mcp", "bridge", spec],
                           [{"id": "1", "method": "initialize", "params": {"protocolVersion": "0.1.0"}}], "1")
              for _ in range(runs)]
    direct = [first_answer(server, [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                       "clientInfo": {"name": "bench", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}], 2) for _ in range(runs)]
    return statistics.median(bridge), statistics.median(direct)

bridge, direct = startup(["node", everything, "stdio"])
small_bridge, small_direct = startup(["python3", fixture, "ok", os.path.join(os.environ["HOME"], "fixture.pid")])
print(f"runs per figure:                          {runs}")
print(f"per round, built-in ls:                   {ls:7.2f} ms  (reference)")
print(f"per round, plugin_echo (example plugin):  {plugin:7.2f} ms  (+{plugin - ls:.2f} ms)")
print(f"per round, echo (server-everything, MCP): {mcp:7.2f} ms  (+{mcp - ls:.2f} ms; {mcp / plugin:.1f}x a native plugin call)")
print(f"server-everything alone to tools/list:    {direct:7.2f} ms  (reference: node and the server's own start-up)")
print(f"etch mcp bridge to tools available:       {bridge:7.2f} ms  (+{bridge - direct:.2f} ms; {bridge / direct:.2f}x; includes node answering two requests in turn)")
print(f"small Python server alone to tools/list:  {small_direct:7.2f} ms  (reference)")
print(f"etch mcp bridge to its tools available:   {small_bridge:7.2f} ms  (+{small_bridge - small_direct:.2f} ms: the bridge's own cost)")
PY
