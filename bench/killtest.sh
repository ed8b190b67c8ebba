#!/usr/bin/env bash
# Crash rounds (issue 37, "kill etch where it writes"): N rounds (default
# 100) of the release `etch` SIGKILLed at the points where it writes,
# taken in turn (a seeded choice varies the moment within a point:
# which tool, how many lines, how much room), each in a fresh workspace
# and HOME against a local fake model server:
#
#   tool:STAGE          `write` or `edit` of a 2 MB file (request held,
#                       the call being logged, the new content being
#                       written, file replaced, result logged, next
#                       request)
#   compact:HOW:STAGE   `etch compact`, the RPC `compact`, automatic
#                       compaction of a 1.2 MB session (summary request
#                       held, usage logged, summary line being written,
#                       summary complete, next request)
#   trust:STAGE         `etch trust --yes` (8 MB pinned script, a trust
#                       file of 5000 projects)
#   hooks:STAGE         `etch hooks import --write` of 20000 hooks
#   import:STAGE        `etch import pi` of 3000 entries and two images
#                       (session opened unnamed, an image stored, a
#                       seeded size written, session named); a session
#                       is there whole or not at all
#   import:again        then `etch import pi` again must complete it
#   serve:STAGE         `etch serve` running three sessions at once
#   disk:run, disk:compact   a full disk (`ulimit -f`, SIGXFSZ ignored):
#                       the log write fails naming the file, exit 1
#
# After each kill: `etch sessions`, `etch show ID` and `etch resume ID -p
# "go on"` succeed, every complete JSONL line parses (only the last may
# be torn), every tool call has a result after the resume, the target
# file is wholly old or wholly new, and no temporary file is left.
# etch writes new content into unnamed files (O_TMPFILE) and names them
# once whole, so "being written" is seen in /proc/PID/fd, as a link to
# "DIR/#INODE (deleted)".
#
# Prints a line per failure and a last line `N passed, M failed`.
# Usage: bench/killtest.sh [N]   (default 100; KILLTEST_SEED, default 37)
set -uo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-100}"
case "$rounds" in
    '' | *[!0-9]* | 0) echo "bench/killtest.sh: N must be a positive integer" >&2; exit 2 ;;
esac
. bench/lib.sh
RANDOM="${KILLTEST_SEED:-37}"
export ETCH_RETRY_BASE_DELAY_MS=10
kt="$work/kt"
srv="$kt/srv"
mkdir -p "$srv"
victim=""

# The helper: the fake model server, the generated inputs, the log checks.
cat > "$kt/helper.py" <<'PY'
import base64, json, os, sys, threading, time, zlib, struct
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

def lines(word, size):
    out, i = [], 0
    total = 0
    while total < size:
        line = f"{word} line {i:07} of a large file to be replaced\n"
        out.append(line); total += len(line); i += 1
    return "".join(out)

OLD = lines("old", 2 << 20)
NEEDLE = "old line 0012345 of a large file to be replaced\n"

def new_content():
    return "".join(l.replace("old", "new", 1) if i % 9973 == 17 else l
                   for i, l in enumerate(OLD.splitlines(True)))

def chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

def text_frames(text, size=65536):
    frames = [chunk({"role": "assistant", "content": text[:size]})]
    frames += [chunk({"content": text[i:i + size]}) for i in range(size, len(text), size)]
    return frames + [chunk({}, "stop")]

def call_frames(cid, name, args):
    a = json.dumps(args)
    third = max(1, len(a) // 3 + 1)
    frames = [chunk({"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}]})]
    frames += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": a[i:i + third]}}]})
               for i in range(0, len(a), third)]
    return frames + [chunk({}, "tool_calls")]

SUMMARY = "## Goal\nExplain the codebase.\n## Progress\n" + "- read one more module and noted what it does\n" * 11400

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    lock = threading.Lock()
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        scenario = self.path.split("/")[1]
        with Handler.lock:
            n = 1 + sum(1 for f in os.listdir(DIR) if f.startswith("req-"))
            open(f"{DIR}/req-{n}", "w").write(self.path)
        if scenario.startswith("held-"):
            scenario = scenario[5:]
            deadline = time.time() + 120
            while not os.path.exists(f"{DIR}/gate-{n}") and time.time() < deadline:
                time.sleep(0.002)
        tooled = any(m["role"] == "tool" for m in body["messages"])
        if scenario == "write" and not tooled:
            frames = call_frames("call_big", "write", {"path": "big.txt", "content": new_content()})
        elif scenario == "edit" and not tooled:
            frames = call_frames("call_big", "edit", {"path": "big.txt", "edits": [
                {"oldText": NEEDLE, "newText": "new line 0012345, edited\n"}]})
        elif scenario == "compact" and "tools" not in body:
            frames = text_frames(SUMMARY)
        elif scenario == "serve" and not tooled:
            frames = call_frames(f"call_ls_{n}", "ls", {"path": "."})
        elif scenario == "serve":
            frames = text_frames(f"served answer {n}: " + "a long served answer " * 13000)
        elif scenario == "longans":
            frames = text_frames("a long answer " * 45000)
        elif scenario == "long":
            frames = text_frames("a long answer: " + "words " * 10000, 4096)
        else:
            frames = text_frames("resumed")
        data = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames) + b"data: [DONE]\n\n"
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass

def png(w, h):
    raw = b"".join(b"\0" + bytes((x * 7 + y * 3) % 256 for x in range(w * 3)) for y in range(h))
    def part(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + part(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + part(b"IDAT", zlib.compress(raw)) + part(b"IEND", b""))

def pi_file(path, cwd):
    at = "2026-02-03T04:05:06.000Z"
    images = [base64.b64encode(png(32, 16)).decode(), base64.b64encode(png(16, 32)).decode()]
    out = [json.dumps({"type": "session", "version": 3, "id": "pi-kill-1", "timestamp": at, "cwd": cwd})]
    parent = None
    for i in range(1500):
        content = [{"type": "text", "text": f"question {i}: " + "why " * 40}]
        if i in (10, 750):
            content.append({"type": "image", "data": images[i != 10], "mimeType": "image/png"})
        out.append(json.dumps({"type": "message", "id": f"u{i}", "parentId": parent, "timestamp": at,
                               "message": {"role": "user", "content": content}}))
        out.append(json.dumps({"type": "message", "id": f"a{i}", "parentId": f"u{i}", "timestamp": at,
                               "message": {"role": "assistant", "provider": "openai", "api": "openai-completions",
                                           "model": "m1", "stopReason": "stop",
                                           "content": [{"type": "text", "text": f"answer {i}: " + "because " * 40}]}}))
        parent = f"a{i}"
    open(path, "w").write("\n".join(out) + "\n")

def logs(ws):
    d = f"{ws}/.etch/sessions"
    return sorted(f"{d}/{f}" for f in os.listdir(d) if f.endswith(".jsonl")) if os.path.isdir(d) else []

def check(mode, ws, state):
    """pre: every complete line parses; torn last lines are remembered.
    post: the same, fragments allowed only where remembered, no torn
    last line, and every tool call has a result."""
    frags = json.load(open(state)) if mode == "post" and os.path.exists(state) else {}
    problems, torn = [], {}
    for path in logs(ws):
        data = open(path, "rb").read()
        parts = data.split(b"\n")
        tail = parts.pop()
        known = [base64.b64decode(f) for f in frags.get(path, [])]
        events = []
        for number, line in enumerate(parts, 1):
            if not line.strip() or line in known:
                continue
            try:
                events.append(json.loads(line))
            except ValueError:
                problems.append(f"{os.path.basename(path)} line {number} is torn or not JSON ({len(line)} bytes)")
        if tail:
            if mode == "post":
                problems.append(f"{os.path.basename(path)} ends torn after a resume")
            torn[path] = [base64.b64encode(tail).decode()]
        if mode == "post" and not path.endswith("index.jsonl"):
            calls = sum(1 for e in events if e.get("type") == "message.assistant"
                        for p in e["data"].get("content") or [] if p.get("type") == "tool_call")
            results = sum(1 for e in events if e.get("type") == "message.tool")
            if calls != results:
                problems.append(f"{os.path.basename(path)}: {calls} tool calls, {results} results")
    if mode == "pre":
        json.dump(torn, open(state, "w"))
    print("; ".join(problems))
    return not problems

what = sys.argv[1]
if what == "serve":
    DIR = sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()
elif what == "old":
    sys.stdout.write(OLD)
elif what == "new":
    sys.stdout.write(new_content())
elif what == "edited":
    sys.stdout.write(OLD.replace(NEEDLE, "new line 0012345, edited\n", 1))
elif what == "pi":
    pi_file(sys.argv[2], sys.argv[3])
elif what == "settings":
    hooks = [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"./hooks/check-{i}.sh --strict"}]}
             for i in range(int(sys.argv[2]))]
    print(json.dumps({"hooks": {"PreToolUse": hooks}}))
elif what == "trust":
    projects = {f"/elsewhere/project-{i}/.etch/config.toml": {"hash": f"{i:064x}"} for i in range(int(sys.argv[2]))}
    sys.stdout.write(json.dumps({"version": 1, "projects": projects}, indent=2))
elif what == "trusted":
    p = json.load(open(sys.argv[2]))["projects"]
    sys.exit(0 if len(p) == 5001 and sys.argv[3] in p else 1)
elif what == "messages":
    n = max((sum(1 for l in open(f) if '"type":"message.user"' in l or '"type":"message.assistant"' in l)
             for f in logs(sys.argv[2])), default=0)
    print(n)
elif what == "check":
    sys.exit(0 if check(sys.argv[2], sys.argv[3], sys.argv[4]) else 1)
PY

python3 "$kt/helper.py" serve "$srv" > "$kt/port" 2> /dev/null &
fake_pid=$!
trap 'kill -9 $victim 2>/dev/null; kill "$fake_pid" "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$kt/port" ] && break; sleep 0.05; done
fport="$(cat "$kt/port")"
python3 "$kt/helper.py" old > "$kt/old.txt"
python3 "$kt/helper.py" new > "$kt/new.txt"
python3 "$kt/helper.py" edited > "$kt/edited.txt"
python3 "$kt/helper.py" settings 20000 > "$kt/settings.json"
python3 "$kt/helper.py" trust 5000 > "$kt/trust.json"
printf '#!/bin/sh\nexit 0\n' > "$kt/guard.sh"
for _ in $(seq 120000); do echo "# a long comment that pads the script to make hashing it take a while"; done >> "$kt/guard.sh"
hooks_config='[[hooks.PreToolUse]]
matcher = "bash"
command = "true"'
compaction_config='[context]
keep_recent_tokens = 0
[session]
keep_messages = 1
[provider]
max_retries = 0'

# The flags that point etch at the fake server's scenario $1.
m() { echo --provider openai --base-url "http://127.0.0.1:$fport/$1/v1" --api-key k --model m1; }
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
inode() { stat -c %i "$1" 2>/dev/null || echo 0; }
read_bytes() {
    local key value
    while read -r key value; do [ "$key" = rchar: ] && { echo "$value"; return; }; done < "/proc/$victim/io"
    echo 0
} 2>/dev/null
session_logs() { compgen -G "$ws/.etch/sessions/*.jsonl" | grep -v '/index\.jsonl$'; }
first_log() { session_logs | head -n 1; }
# Whether etch has an unnamed file open in directory $1 (or below) of
# at least $2 bytes.
unnamed() {
    local dir min=${2:-0} fd target
    dir=$(realpath "$1" 2>/dev/null) || return 1
    for fd in /proc/"$victim"/fd/*; do
        target=$(readlink "$fd" 2>/dev/null) || continue
        case "$target" in "$dir"/*'#'*' (deleted)') ;; *) continue ;; esac
        [ "$(stat -L -c %s "$fd" 2>/dev/null || echo 0)" -ge "$min" ] && return 0
    done
    return 1
}
problem() { problems+=("$1"); }
# Polls the condition until it holds (0), the victim exits (1) or 30 s
# pass (2).
reach() {
    local deadline=$((SECONDS + 30))
    until eval "$1"; do
        kill -0 "$victim" 2>/dev/null || return 1
        [ "$SECONDS" -lt "$deadline" ] || return 2
    done
}
# Goes through the conditions $2..., killing the victim at number $1
# (the others pass; `gate N` opens the fake server's gate N after them).
kill_at() {
    local at=$1 i=0 cond
    shift
    for cond in "$@"; do
        case "$cond" in
            gate\ *) touch "$srv/gate-${cond#gate }"; continue ;;
        esac
        reach "$cond"
        local r=$?
        if [ "$r" = 2 ]; then problem "condition not reached in 30 s: $cond"; break; fi
        if [ "$r" = 1 ]; then
            # A command that ends by itself may finish before a stage is
            # seen (the file is then wholly new); a run held by the fake
            # server may not.
            [ "$i" = "$at" ] || [ "$may_exit" = 1 ] || problem "etch exited before: $cond"
            break
        fi
        [ "$i" = "$at" ] && break
        i=$((i + 1))
    done
    kill -9 "$victim" 2>/dev/null
    wait "$victim" 2>/dev/null
    victim=""
}
start() { reset_server; "$etch" "$@" > "$rd/out" 2> "$rd/err" & victim=$!; }
# Forgets the requests and gates of the set-up runs.
reset_server() { rm -f "$srv"/req-* "$srv"/gate-*; }

# After every round: the sessions load, show and resume, nothing is torn
# but a last line, every call has a result, no temporary file is left.
common_checks() {
    local out log id
    "$etch" sessions > /dev/null 2> "$rd/cerr" || problem "etch sessions failed: $(head -c 300 "$rd/cerr")"
    out=$(python3 "$kt/helper.py" check pre "$ws" "$rd/frags") || problem "after the kill: $out"
    for log in $(session_logs); do
        id=$(basename "$log" .jsonl)
        "$etch" show "$id" > /dev/null 2> "$rd/cerr" || problem "etch show $id failed: $(head -c 300 "$rd/cerr")"
        out=$("$etch" resume "$id" -p "go on" $(m text) 2> "$rd/cerr")
        [ "$out" = resumed ] || problem "etch resume $id said '$out': $(tail -c 300 "$rd/cerr")"
    done
    out=$(python3 "$kt/helper.py" check post "$ws" "$rd/frags") || problem "after resuming: $out"
    out=$(find "$ws" "$home" \( -name '*.etch-tmp-*' -o -name '*.tmp' -o -name '*.json.tmp-*' -o -name '*.partial' \) -printf '%P ' 2> /dev/null)
    [ -z "$out" ] || problem "temporary files left: $out"
}

point_tool() {
    local stage=$1 kind log0 ino
    if [ $((RANDOM % 2)) = 0 ]; then kind=write; else kind=edit; fi
    detail="$kind"
    cp "$kt/old.txt" big.txt
    ino=$(inode big.txt)
    start -p "rewrite big.txt" $(m "held-$kind")
    kill_at "$stage" \
        "[ -e $srv/req-1 ]" \
        'log0=$(size "$(first_log)"); true' "gate 1" \
        '[ "$(size "$(first_log)")" -gt "$log0" ]' \
        "unnamed '$ws' || compgen -G '$ws/.big.txt.etch-tmp-*' > /dev/null || [ \"\$(inode big.txt)\" != $ino ]" \
        "[ \"\$(inode big.txt)\" != $ino ]" \
        'tail -c 65536 "$(first_log)" | grep -q "\"type\":\"message.tool\""' \
        "[ -e $srv/req-2 ]"
    local want="$kt/new.txt"
    [ "$kind" = edit ] && want="$kt/edited.txt"
    cmp -s big.txt "$kt/old.txt" || cmp -s big.txt "$want" \
        || problem "big.txt is torn: $(size big.txt) bytes, neither old nor new"
}
# The stage number the tool points' conditions count (the size snapshot
# and the gate are not stages).
tool_stage() { case $1 in 0) echo 0 ;; *) echo $(($1 + 1)) ;; esac; }

long_session() {
    printf '%s\n' "$compaction_config" > .etch/config.toml
    "$etch" -p "$(printf 'please explain the whole codebase %.0s' $(seq 100))" $(m longans) > /dev/null 2>&1
    local id
    id=$(basename "$(first_log)" .jsonl)
    "$etch" resume "$id" -p "and the tests too" $(m longans) > /dev/null 2>&1
    echo "$id"
}

point_compact() {
    local how=$1 stage=$2 id log before
    mkdir -p .etch
    id=$(long_session)
    log=$(first_log)
    case $how in
        manual) start compact --session "$id" $(m held-compact) ;;
        rpc)
            mkfifo "$rd/in"
            reset_server
            "$etch" rpc --session "$id" $(m held-compact) < "$rd/in" > "$rd/out" 2> "$rd/err" &
            victim=$!
            exec 7> "$rd/in"
            echo '{"id":"c","type":"compact"}' >&7 ;;
        auto)
            printf '%s\n' "$compaction_config" | sed 's/^\[context\]$/[context]\nauto_compact = true\nauto_compact_threshold_tokens = 1000/' > .etch/config.toml
            start resume "$id" -p "and the docs?" $(m held-compact) ;;
    esac
    local prompt="true"
    [ "$how" = rpc ] && prompt='echo "{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"and the docs?\"}" >&7'
    kill_at "$stage" \
        "[ -e $srv/req-1 ]" \
        "before=\$(size $log); true" "gate 1" \
        "[ \"\$(size $log)\" -gt \"\$before\" ]" \
        "[ \"\$(size $log)\" -gt \$((before + 16384)) ]" \
        "[ \"\$(size $log)\" -gt \$((before + 524288)) ] && [ -z \"\$(tail -c 1 $log)\" ]" \
        "$prompt" \
        "[ -e $srv/req-2 ]"
    [ "$how" = rpc ] && exec 7>&-
    printf '%s\n' "$compaction_config" > .etch/config.toml
    [ "$(grep -c '"type":"context.summary"' "$log")" -le 1 ] || problem "more than one summary logged"
}
compact_stage() { case $1 in 0) echo 0 ;; 4) echo 6 ;; *) echo $(($1 + 1)) ;; esac; }

point_trust() {
    local stage=$1 old_ino
    mkdir -p .etch scripts "$home/.etch"
    printf '[[hooks.PreToolUse]]\nmatcher = "bash"\ncommand = "sh scripts/guard.sh"\n' > .etch/config.toml
    cp "$kt/guard.sh" scripts/guard.sh
    cp "$kt/trust.json" "$home/.etch/trust.json"
    old_ino=$(inode "$home/.etch/trust.json")
    start trust --yes
    kill_at "$stage" \
        "true" \
        "[ \"\$(read_bytes)\" -ge $(size "$kt/guard.sh") ]" \
        "unnamed '$home/.etch' || [ \"\$(inode '$home/.etch/trust.json')\" != $old_ino ]" \
        "[ \"\$(inode '$home/.etch/trust.json')\" != $old_ino ]"
    local trusted=no
    if ! cmp -s "$home/.etch/trust.json" "$kt/trust.json"; then
        python3 "$kt/helper.py" trusted "$home/.etch/trust.json" "$ws/.etch/config.toml" \
            && trusted=yes || problem "trust.json is torn or lost projects ($(size "$home/.etch/trust.json") bytes)"
    fi
    local said
    said=$("$etch" trust 2>&1) || problem "etch trust failed: $said"
    case "$trusted:$said" in
        yes:*"(trusted)"* | no:*"(not trusted"*) ;;
        *) problem "etch trust disagrees with trust.json (trusted: $trusted)" ;;
    esac
}

point_hooks() {
    local stage=$1
    mkdir -p .etch .claude
    printf '%s\n' "$hooks_config" > .etch/config.toml
    cp "$kt/settings.json" .claude/settings.json
    if [ ! -e "$kt/hooks-new.toml" ]; then
        "$etch" hooks import --write > /dev/null 2>&1
        cp .etch/config.toml "$kt/hooks-new.toml"
        printf '%s\n' "$hooks_config" > .etch/config.toml
    fi
    start hooks import --write
    kill_at "$stage" \
        "true" \
        "[ \"\$(read_bytes)\" -ge $(size .claude/settings.json) ]" \
        "[ \"\$(size .etch/config.toml)\" -gt $((${#hooks_config} + 1)) ]" \
        "false"
    if cmp -s .etch/config.toml "$kt/hooks-new.toml"; then
        :
    elif [ "$(cat .etch/config.toml)" != "$hooks_config" ]; then
        problem ".etch/config.toml is torn: $(size .etch/config.toml) bytes, neither old nor new"
        printf '%s\n' "$hooks_config" > .etch/config.toml
    fi
}

point_import() {
    local stage=$1 bytes=$((30000 + RANDOM * 30))
    detail="$bytes bytes"
    python3 "$kt/helper.py" pi "$rd/pi.jsonl" "$ws"
    start import pi "$rd/pi.jsonl"
    kill_at "$stage" \
        "unnamed '$ws/.etch'" \
        "compgen -G '$ws/.etch/sessions/*.assets/*.png' > /dev/null" \
        "unnamed '$ws/.etch' $bytes" \
        "[ -n \"\$(first_log)\" ]" \
        "false"
    # Whole or not there: a session named holds every entry.
    if [ -n "$(first_log)" ] && [ "$(wc -l < "$(first_log)")" != 3001 ]; then
        problem "an import left a session of $(wc -l < "$(first_log)") of 3001 lines"
    fi
}

point_import_again() {
    point_import 2
    "$etch" import pi "$rd/pi.jsonl" > "$rd/again" 2>&1 || problem "the second import failed: $(head -c 300 "$rd/again")"
    local n
    n=$(python3 "$kt/helper.py" messages "$ws")
    [ "$n" -ge 3000 ] || problem "after a second import the session holds $n of 3000 messages: $(head -c 200 "$rd/again")"
}

point_serve() {
    local stage=$1 url token id ids=() k conds=()
    reset_server
    "$etch" serve --listen 127.0.0.1:0 --json $(m serve) > "$rd/out" 2> "$rd/err" &
    victim=$!
    reach '[ -s "$rd/out" ]'
    url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$rd/out" | head -n 1)
    token=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$rd/out" | head -n 1)
    for k in 1 2 3; do
        id=$(curl -s -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
            -d '{}' "$url/v1/sessions" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
        ids+=("$id")
    done
    for id in "${ids[@]}"; do
        curl -s -o /dev/null -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
            -d '{"message":"list the files, then explain"}' "$url/v1/sessions/$id/prompt"
    done
    for k in 1 2 3 4 5 6; do conds+=("[ -e $srv/req-$k ]"); done
    local all="true"
    for id in "${ids[@]}"; do
        all="$all && tail -c 65536 '$ws/.etch/sessions/$id.jsonl' 2>/dev/null | grep -q '\"stopReason\":\"stop\"'"
    done
    conds+=("$all")
    kill_at "$stage" "${conds[@]}"
}

point_disk() {
    local how=$1 id log before room limit block out rc
    mkdir -p .etch
    if [ "$how" = compact ]; then
        id=$(long_session)
        if [ $((RANDOM % 2)) = 0 ]; then room=0; else room=20000; fi
    else
        "$etch" -p "a first question" $(m text) > /dev/null 2>&1
        id=$(basename "$(first_log)" .jsonl)
        room=$((RANDOM % 60000))
    fi
    detail="$room bytes of room"
    log=$(first_log)
    before=$(size "$log")
    block=$(sh -c 'ulimit -S -f 4; grep "Max file size" /proc/self/limits' | awk '{print $4 / 4}')
    limit=$(((before + room + block - 1) / block))
    if [ "$how" = compact ]; then
        sh -c 'trap "" XFSZ; ulimit -S -f '"$limit"'; exec "$0" "$@"' "$etch" compact --session "$id" $(m compact) > "$rd/out" 2> "$rd/err"
    else
        sh -c 'trap "" XFSZ; ulimit -S -f '"$limit"'; exec "$0" "$@"' "$etch" resume "$id" -p "a second question" $(m long) > "$rd/out" 2> "$rd/err"
    fi
    rc=$?
    out=$(cat "$rd/err")
    [ "$rc" = 1 ] || problem "exit code $rc, not 1: $(tail -c 300 "$rd/err")"
    case "$out" in *panicked*) problem "it panicked: $(tail -c 300 "$rd/err")" ;; esac
    case "$out" in *"$log"*"File too large"*) ;; *) problem "the error does not name the log and the failure: $(tail -c 300 "$rd/err")" ;; esac
    printf '%s\n' "$compaction_config" > .etch/config.toml
}

points=()
for s in 0 1 2 3 4 5; do points+=("tool:$s"); done
for s in 0 1 2 3; do points+=("compact:manual:$s"); done
for how in rpc auto; do for s in 0 1 2 3 4; do points+=("compact:$how:$s"); done; done
for s in 0 1 2 3; do points+=("trust:$s"); done
for s in 0 1 2 3; do points+=("hooks:$s"); done
for s in 0 1 2 3 4; do points+=("import:$s"); done
points+=("import:again")
for s in 0 1 2 3 4 5 6; do points+=("serve:$s"); done
points+=("disk:run" "disk:compact")

passed=0
failed=0
for ((r = 0; r < rounds; r++)); do
    point="${points[r % ${#points[@]}]}"
    rd="$kt/r$r"
    ws="$rd/ws"
    home="$rd/home"
    mkdir -p "$ws" "$home"
    rm -f "$srv"/req-* "$srv"/gate-*
    IFS=: read -r kind a b <<< "$point"
    export HOME="$home"
    cd "$ws"
    problems=()
    detail=""
    may_exit=0
    case "$kind" in compact | trust | hooks | import) may_exit=1 ;; esac
    case "$kind" in
        tool) point_tool "$(tool_stage "$a")" ;;
        compact) point_compact "$a" "$(compact_stage "$b")" ;;
        trust) point_trust "$a" ;;
        hooks) point_hooks "$a" ;;
        import) if [ "$a" = again ]; then point_import_again; else point_import "$a"; fi ;;
        serve) point_serve "$a" ;;
        disk) point_disk "$a" ;;
    esac
    common_checks
    cd "$kt"
    rm -rf "$rd"
    if [ "${#problems[@]}" = 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        for p in "${problems[@]}"; do
            echo "round $r, $point${detail:+ ($detail)}: $p"
        done
    fi
done
echo "$passed passed, $failed failed"
