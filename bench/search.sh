#!/usr/bin/env bash
# Search benchmark: `etch tool grep` against `rg` and `etch tool find`
# against `fd` over one large tree, doing the same work. Prints the median
# wall time of each command, the ratios, and the targets:
#   grep: etch within 1.3x of rg      find: etch within 1.5x of fd
#
# Usage: bench/search.sh [RUNS]   (default 10 runs per command, after 2
#                                  warm-up runs, commands interleaved)
# Environment:
#   ETCH=path        use this etch binary instead of building target/release/etch
#   TREE=dir         search this tree instead of the default one
#   GREP_PATTERN=s   literal to grep for   FIND_PATTERN=s   substring for find
#
# The tree is the Rust standard library sources when the toolchain has them
# ($(rustc --print sysroot)/lib/rustlib/src/rust), otherwise 50,000 generated
# files of code-like text (about 160 MB) in a temp dir removed on exit.
#
# Equal work: etch searches literally, includes hidden files, respects
# .gitignore/.ignore, skips .git, .etch, node_modules, vendor and bin
# directories, files over 1 MiB and binary files, and stops at depth 32; rg and
# fd get the flags that do the same. etch's limits are set far above the
# result counts (--limit 100000000) so it never stops early; the default
# patterns are rare (grep: a few dozen matching lines, so neither the total
# limit nor etch's 20-per-file cap applies) or moderately common (find). rg
# and fd print unsorted as they find; etch sorts, which is part of its cost.
# fd matches the pattern against the absolute path (--full-path), etch against
# the path relative to the root: the pattern must not occur in the root path.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"

have_fd() { command -v fdfind >/dev/null 2>&1 || command -v fd >/dev/null 2>&1; }
if ! command -v rg >/dev/null 2>&1 || ! have_fd; then
  apt-get install -y -qq ripgrep fd-find >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq ripgrep fd-find >/dev/null; }
fi
# Debian names the fd binary `fdfind`.
fd_bin="$(command -v fdfind || command -v fd)"
rg_bin="$(command -v rg)"

if [ -z "${ETCH:-}" ]; then
  cargo build --release --locked -q -p etch
  ETCH="$PWD/target/release/etch"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

rust_src="$(rustc --print sysroot 2>/dev/null || true)/lib/rustlib/src/rust"
if [ -n "${TREE:-}" ]; then
  tree="$TREE"
  grep_pattern="${GREP_PATTERN:-SpecFromIterNested}"
  find_pattern="${FIND_PATTERN:-iter}"
elif [ -d "$rust_src/library" ]; then
  tree="$rust_src"
  grep_pattern="${GREP_PATTERN:-SpecFromIterNested}"
  find_pattern="${FIND_PATTERN:-iter}"
else
  tree="$work/tree"
  grep_pattern="${GREP_PATTERN:-zorblax_frobnicate}"
  find_pattern="${FIND_PATTERN:-parser}"
  echo "generating 50,000 files in $tree ..." >&2
  python3 - "$tree" <<'PY'
import os, random, sys

root = sys.argv[1]
rng = random.Random(42)
syll = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "pe", "si", "da", "gu", "ze"]
words = sorted({"".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(400)})
words += ["parser", "lexer", "config", "util", "render", "buffer", "token", "index"]
exts = ["rs", "py", "ts", "go", "c", "md"]
templates = [
    "    let {a}_{b} = {c}(&{d}, {n});",
    "fn {a}_{b}({c}: &{D}) -> Result<{D}, Error> {{",
    "    if {a}.{b}() > {n} {{ return {c}; }}",
    "    // {a} {b} {c} {d}: see {n}",
    "    {a}.{b}.push({c}::{d}({n}));",
    "}}",
    "",
    "import {a}.{b} as {c}",
    "    for {a} in {b}.iter() {{ {c} += {a}.{d}; }}",
]

def line(rng):
    a, b, c, d = (rng.choice(words) for _ in range(4))
    return rng.choice(templates).format(a=a, b=b, c=c, d=d, D=d.capitalize(), n=rng.randint(0, 9999))

count = 0
for top in range(40):
    for sub in range(25):
        d = os.path.join(root, f"{words[top * 7 % len(words)]}{top}", f"{rng.choice(words)}_{sub}")
        os.makedirs(d, exist_ok=True)
        for i in range(50):
            name = f"{rng.choice(words)}_{i}.{rng.choice(exts)}"
            lines = [line(rng) for _ in range(rng.randint(40, 120))]
            if count % 2000 == 7:
                lines.insert(rng.randrange(len(lines)), "    zorblax_frobnicate(&mut state);")
            with open(os.path.join(d, name), "w") as f:
                f.write("\n".join(lines) + "\n")
            count += 1
# Hidden, ignored and internal entries, so every tool has the same pruning to do.
os.makedirs(os.path.join(root, ".config"), exist_ok=True)
with open(os.path.join(root, ".config", "parser.toml"), "w") as f:
    f.write("zorblax_frobnicate = true\n")
with open(os.path.join(root, ".ignore"), "w") as f:
    f.write("*.log\n")
with open(os.path.join(root, "parser_trace.log"), "w") as f:
    f.write("zorblax_frobnicate\n" * 100)
for internal in ["node_modules/parser", "vendor/parser", "bin"]:
    d = os.path.join(root, internal)
    os.makedirs(d, exist_ok=True)
    for i in range(200):
        with open(os.path.join(d, f"parser_{i}.js"), "w") as f:
            f.write("zorblax_frobnicate();\n")
print(f"{count} files", file=sys.stderr)
PY
fi

excludes=(.git .etch node_modules vendor bin)
rg_cmd=("$rg_bin" --fixed-strings --hidden --no-require-git --no-messages --color never
  --line-number --with-filename --no-heading --max-filesize 1M --max-depth 32)
fd_cmd=("$fd_bin" --hidden --ignore-case --fixed-strings --full-path --color never --max-depth 32)
for dir in "${excludes[@]}"; do
  rg_cmd+=(--glob "!$dir")
  fd_cmd+=(--exclude "$dir")
done

echo "tree:        $tree ($(nproc) CPUs)"
echo "grep:        '$grep_pattern'    find: '$find_pattern'"
HOME="$work" python3 - "$runs" "$tree" "$grep_pattern" "$find_pattern" "$ETCH" \
  "${#rg_cmd[@]}" "${rg_cmd[@]}" "${fd_cmd[@]}" <<'PY'
import statistics, subprocess, sys, time

runs, tree, gpat, fpat, etch = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
n_rg = int(sys.argv[6])
rg = sys.argv[7:7 + n_rg]
fd = sys.argv[7 + n_rg:]

commands = {
    "etch grep": [etch, "tool", "grep", gpat, tree, "--limit", "100000000"],
    "rg":        rg + ["--", gpat, tree],
    "etch find": [etch, "tool", "find", fpat, tree, "--limit", "100000000"],
    "fd":        fd + ["--", fpat, tree],
}

def run(cmd):
    """Wall time in ms of one run, and its stdout line count."""
    t = time.perf_counter()
    out = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    ms = (time.perf_counter() - t) * 1000
    if out.returncode not in (0, 1):
        sys.exit(f"{cmd[0]} failed with status {out.returncode}: {' '.join(cmd)}")
    return ms, out.stdout.count(b"\n")

# Warm the page cache and check that both sides find the same things.
lines = {}
for name, cmd in commands.items():
    for _ in range(2):
        _, lines[name] = run(cmd)
times = {name: [] for name in commands}
for _ in range(runs):  # interleaved, so machine noise hits all alike
    for name, cmd in commands.items():
        times[name].append(run(cmd)[0])
med = {name: statistics.median(t) for name, t in times.items()}

print(f"runs per command: {runs}")
print(f"output lines:     etch grep {lines['etch grep']}, rg {lines['rg']}; "
      f"etch find {lines['etch find']}, fd {lines['fd']}")
for name in commands:
    print(f"{name:<10} median {med[name]:8.1f} ms   (min {min(times[name]):.1f}, max {max(times[name]):.1f})")
g = med["etch grep"] / med["rg"]
f = med["etch find"] / med["fd"]
print(f"grep ratio etch/rg: {g:.2f}x  (target <= 1.30x: {'ok' if g <= 1.3 else 'MISSED'})")
print(f"find ratio etch/fd: {f:.2f}x  (target <= 1.50x: {'ok' if f <= 1.5 else 'MISSED'})")
PY
