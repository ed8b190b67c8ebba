#!/usr/bin/env bash
# Whole-process start-up benchmark (issue 2): `etch -p hello --provider echo`
# against /bin/true in the same run. Prints median wall time of each, the
# difference, the ratio, and etch's peak RSS.
#
# Usage: bench/startup.sh [RUNS]   (default 200; builds etch --release first)
# Targets: median within 5 ms of /bin/true; peak RSS under 10 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-200}"
if [ ! -x /usr/bin/time ]; then
  apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
fi
cargo build --release --locked -q -p etch
etch="$PWD/target/release/etch"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
HOME="$work" python3 - "$etch" "$runs" <<'PY'
import os, statistics, subprocess, sys, time

etch, runs = sys.argv[1], int(sys.argv[2])
env = {k: v for k, v in os.environ.items()
       if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "CODEX_ACCESS_TOKEN", "ANTHROPIC_API_KEY")}

def measure(cmd):
    """Median wall time in ms of `runs` runs, warm-up excluded."""
    for _ in range(5):
        subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)

# Interleave the two commands so machine noise hits both alike.
base = measure(["/bin/true"])
ours = measure([etch, "-p", "hello", "--provider", "echo"])
base2 = measure(["/bin/true"])
base = min(base, base2)

# Peak RSS of etch itself, measured by GNU time around the exec'd process
# (a Python child's own accounting would include the interpreter's pages).
rss = []
for _ in range(10):
    out = subprocess.run(["/usr/bin/time", "-f", "%M", etch, "-p", "hello", "--provider", "echo"],
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, check=True)
    rss.append(int(out.stderr.strip().splitlines()[-1]))
rss_kib = max(rss)
print(f"runs per command:       {runs}")
print(f"/bin/true median:       {base:.2f} ms")
print(f"etch -p hello median:   {ours:.2f} ms")
print(f"difference:             {ours - base:.2f} ms   (target: < 5 ms)")
print(f"ratio etch / true:      {ours / base:.2f}x")
print(f"etch peak RSS:          {rss_kib / 1024:.2f} MiB (target: < 10 MiB)")
PY
