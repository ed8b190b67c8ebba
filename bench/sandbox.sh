#!/usr/bin/env bash
# What the sandbox adds to one bash call (issue 32): `bash -c true`
# started directly, beside the same command started through the helper
# (`etch __sandbox-exec POLICY -- bash -c true`: exec of etch, the mount
# namespace with .git read-only and a tmpfs over each denied directory,
# the Landlock ruleset, the seccomp filter, then exec of bash),
# alternated in one run.
# The policy is the default one for a workspace with a .git, a home with
# the usual secret directories present among forty other entries, the
# network off. The home is outside /tmp, as a real one is. Target:
# under 2 ms added per call.
#
# Usage: bench/sandbox.sh [RUNS]   (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-300}"
cargo build --release --locked -q -p etch
etch="$PWD/target/release/etch"
work="$(mktemp -d -p /var/tmp)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws/.git" "$work/ws/.etch" "$work/home/.ssh" "$work/home/.gnupg" \
  "$work/home/.aws" "$work/home/.etch/auth" "$work/home/.config/gh" "$work/home/code"
for i in $(seq 40); do touch "$work/home/.dotfile$i"; mkdir -p "$work/home/.config/app$i"; done
cd "$work/ws"
python3 - "$etch" "$work" "$runs" <<'PY'
import json, statistics, subprocess, sys, time
etch, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
home = f"{work}/home"
policy = json.dumps({
    "mode": "workspace-write", "network": False,
    "writable": [f"{work}/ws", "/tmp"],  # /tmp holds no denied path here
    "deny_read": [f"{home}/{d}" for d in (".ssh", ".gnupg", ".aws", ".etch/auth", ".config/gh")],
    "protected": [f"{work}/ws/.git", f"{work}/ws/.etch"],
})
report = subprocess.run([etch, "__sandbox-exec", "--probe", policy], capture_output=True, text=True)
print("helper reports:", report.stdout.strip() or report.stderr.strip())
direct = ["bash", "-c", "true"]
sandboxed = [etch, "__sandbox-exec", policy, "--", "bash", "-c", "true"]

def once(argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True)
    return (time.perf_counter() - t) * 1000

for _ in range(20):  # warm the page cache for both
    once(direct); once(sandboxed)
plain, confined = [], []
for _ in range(runs):
    plain.append(once(direct)); confined.append(once(sandboxed))
med = statistics.median
p = lambda xs, q: sorted(xs)[int(len(xs) * q)]
print(f"calls per figure:          {runs}")
print(f"bash -c true, direct:      median {med(plain):6.2f} ms  p90 {p(plain, .9):6.2f} ms")
print(f"through the sandbox:       median {med(confined):6.2f} ms  p90 {p(confined, .9):6.2f} ms")
print(f"added by the sandbox:      {med(confined) - med(plain):6.2f} ms per call (target < 2 ms)")
print(f"ratio sandboxed/direct:    {med(confined) / med(plain):6.2f}x")
PY
