#!/usr/bin/env bash
# Whole-process benchmark of the first request to a local model server
# (issue 30): the project's real llama.cpp server and
# Qwen2.5-Coder-1.5B (scripts/real-model.sh; installed on first use),
# one task ("How many lines does notes.txt have?") in PROJECTS fresh
# project directories in a row, each with its own AGENTS.md and cwd, by
# the release etch and, when installed, by Pi on the same server.
# Per run, from the server's own timing log: the prompt tokens the first
# request had to evaluate (what the server's prompt cache did not hold)
# and how long that took; and the whole run's wall time and requests.
# The first project of each agent warms the cache; the later ones show
# what a prompt prefix shared across projects saves (etch's system
# message and tools are the same in every project; a per-project prompt
# before the tools would be evaluated again each time).
#
# Usage: bench/local_prompt.sh [PROJECTS]   (default 3)
#        ETCH=/path/to/etch bench/local_prompt.sh   (that binary; no build)
#        PI=/path/to/pi bench/local_prompt.sh       (Pi's CLI; default: `pi`
#        on PATH, skipped when there is none)
#        ETCH_BENCH_RUN_SECS=N   (a run is cut after N s; default 240)
# Needs curl and python3; the server runs on one thread (the default of
# scripts/real-model.sh), so figures are slow but comparable.
set -euo pipefail
cd "$(dirname "$0")/.."
projects="${1:-3}"
case "$projects" in
    '' | *[!0-9]* | 0) echo "bench/local_prompt.sh: PROJECTS must be a positive integer" >&2; exit 2 ;;
esac
root="$PWD"
if [ -n "${ETCH:-}" ]; then
    etch="$(realpath "$ETCH")"
else
    cargo build --release --locked -q -p etch
    etch="$root/target/release/etch"
fi
pi="${PI:-$(command -v pi || true)}"
scripts/real-model.sh setup >&2
work="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
scripts/real-model.sh serve "$port" > "$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 300); do
    curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"ok"' && break
    sleep 0.2
done
model=qwen2.5-coder-1.5b-instruct
url="http://127.0.0.1:$port/v1"
prompt="How many lines does notes.txt have?"
# A small model sometimes writes on until its context is full (minutes on
# one thread): a run is cut after this many seconds, its first request
# measured all the same.
limit="${ETCH_BENCH_RUN_SECS:-240}"
unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENROUTER_API_KEY CODEX_ACCESS_TOKEN \
    HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy
export NO_PROXY=127.0.0.1

# One run of agent $1 in a fresh project numbered $2; prints a row.
run() {
    local agent=$1 n=$2 dir="$work/$1-$2"
    mkdir -p "$dir/home"
    printf 'alpha\nbeta\ngamma\ndelta\n' > "$dir/notes.txt"
    printf 'Project %s. Keep answers short.\n' "$n" > "$dir/AGENTS.md"
    local before started ended
    before=$(wc -l < "$work/server.log")
    started=$(date +%s.%N)
    if [ "$agent" = etch ]; then
        (cd "$dir" && HOME="$dir/home" timeout "$limit" "$etch" --provider openai --base-url "$url" \
            --model "$model" --max-tool-rounds 4 -p "$prompt" > "$dir/out" 2>&1) || true
    else
        mkdir -p "$dir/home/.pi/agent"
        printf '{"providers":{"local":{"baseUrl":"%s","api":"openai-completions","apiKey":"none","compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},"models":[{"id":"%s"}]}}}\n' \
            "$url" "$model" > "$dir/home/.pi/agent/models.json"
        (cd "$dir" && HOME="$dir/home" timeout "$limit" "$pi" --provider local --model "$model" \
            -p "$prompt" > "$dir/out" 2>&1) || true
    fi
    ended=$(date +%s.%N)
    tail -n +"$((before + 1))" "$work/server.log" > "$dir/server.log"
    python3 - "$agent" "$n" "$started" "$ended" "$dir/server.log" <<'PY'
import re, sys
agent, n, started, ended, log = sys.argv[1:]
evals = re.findall(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", open(log).read())
if evals:
    ms, tokens = evals[0]
    print(f"{agent:5} project {n}  first request: {int(tokens):5} prompt tokens evaluated in "
          f"{float(ms) / 1000:6.1f} s · run {float(ended) - float(started):6.1f} s, {len(evals)} requests")
else:
    print(f"{agent:5} project {n}  no request finished (cut after the time limit, or none was sent)")
PY
}

echo "server: llama.cpp, $model, 127.0.0.1:$port; task: \"$prompt\""
for n in $(seq "$projects"); do run etch "$n"; done
if [ -n "$pi" ] && [ -x "$pi" ]; then
    for n in $(seq "$projects"); do run pi "$n"; done
else
    echo "pi: not installed (set PI=/path/to/pi to compare)"
fi
echo "The first project of each agent starts from what the one before left in"
echo "the server's cache; the later projects show what carries over."
