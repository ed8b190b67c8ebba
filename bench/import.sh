#!/usr/bin/env bash
# `etch import pi` of a large Pi session (issue 35): a generated file of
# SIZE_MB megabytes (default 500) in Pi's v3 format, turns of a prompt, a
# tool call, a 4 KB tool result and an answer, and every tenth prompt
# with a screenshot inline as Pi stores it (about 1 MB of base64, the
# same picture each time, so the assets keep one file). Prints the
# import's wall time and throughput beside reading the file once with
# `wc -l` (the I/O floor) measured in the same run, and its peak RSS,
# which must stay under 100 MiB: the file is streamed, never loaded.
#
# Usage: bench/import.sh [SIZE_MB]   (default 500)
set -euo pipefail
cd "$(dirname "$0")/.."
size="${1:-500}"
case "$size" in
    '' | *[!0-9]* | 0) echo "bench/import.sh: SIZE_MB must be a positive integer" >&2; exit 2 ;;
esac
cargo build --release --locked -q -p etch
cargo build --release --locked -q -p etch-image --example sample
etch="$PWD/target/release/etch"
work="$(mktemp -d -p /var/tmp)"
trap 'rm -rf "$work"' EXIT
target/release/examples/sample 640 480 png "$work/shot.png"
python3 - "$work" "$size" <<'PY'
import base64, json, sys
work, size_mb = sys.argv[1], int(sys.argv[2])
image = base64.b64encode(open(f"{work}/shot.png", "rb").read()).decode()
at = "2026-01-01T00:00:00.000Z"
out = open(f"{work}/pi.jsonl", "w")
out.write(json.dumps({"type": "session", "version": 3, "id": "bench", "timestamp": at, "cwd": work}) + "\n")
parent, n, written, limit = None, 0, 0, size_mb * 1024 * 1024
def put(entry):
    global parent, n, written
    n += 1
    entry.update({"id": f"{n:08x}", "parentId": parent, "timestamp": at})
    line = json.dumps(entry) + "\n"
    out.write(line)
    written += len(line)
    parent = entry["id"]
turn = 0
while written < limit:
    content = [{"type": "text", "text": f"step {turn}: look at the failing test and fix it"}]
    if turn % 10 == 0:
        content.append({"type": "image", "data": image, "mimeType": "image/png"})
    put({"type": "message", "message": {"role": "user", "content": content}})
    put({"type": "message", "message": {"role": "assistant", "provider": "anthropic", "api": "anthropic-messages",
        "model": "claude", "stopReason": "toolUse", "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120},
        "content": [{"type": "toolCall", "id": f"toolu_{turn}", "name": "bash", "arguments": {"command": "cargo test"}}]}})
    put({"type": "message", "message": {"role": "toolResult", "toolCallId": f"toolu_{turn}", "toolName": "bash",
        "isError": False, "content": [{"type": "text", "text": "test output line\n" * 240}]}})
    put({"type": "message", "message": {"role": "assistant", "provider": "anthropic", "api": "anthropic-messages",
        "model": "claude", "stopReason": "stop", "content": [{"type": "text", "text": "Fixed."}]}})
    turn += 1
print(f"generated {written / 1048576:.0f} MB, {n} entries, {turn} turns")
PY
mkdir -p "$work/ws"
cd "$work/ws"
export HOME="$work"
python3 - "$etch" "$work" <<'PY'
import resource, subprocess, sys, time
etch, work = sys.argv[1], sys.argv[2]
def timed(argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t
size = __import__("os").path.getsize(f"{work}/pi.jsonl") / 1048576
floor = timed(["wc", "-l", f"{work}/pi.jsonl"])
took = timed([etch, "import", "pi", f"{work}/pi.jsonl"])
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"file:                {size:8.0f} MB")
print(f"wc -l (reference):   {floor:8.2f} s")
print(f"etch import pi:      {took:8.2f} s  ({size / took:6.0f} MB/s, {took / floor:5.1f}x the read)")
print(f"peak RSS:            {rss:8.1f} MiB (limit 100 MiB)")
PY
du -sh "$work/ws/.etch/sessions" | sed 's/^/etch sessions on disk: /'
