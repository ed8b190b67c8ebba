# Shared set-up of the whole-process benchmarks (sourced by bench/agent.sh
# and bench/rpc.sh): builds the release binary into $etch, starts
# bench/server.py (its port in $port, stopped on exit), and moves into an
# empty workspace with its own HOME and no credentials or proxies, so the
# figures are etch's own cost.
cargo build --release --locked -q -p etch
etch="$PWD/target/release/etch"
bench_dir="$PWD/bench"
work="$(mktemp -d)"
trap 'kill "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 bench/server.py > "$work/port" &
server_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port="$(cat "$work/port")"
mkdir -p "$work/ws"
cd "$work/ws"
export HOME="$work" NO_PROXY=127.0.0.1
unset OPENAI_API_KEY OPENROUTER_API_KEY CODEX_ACCESS_TOKEN ANTHROPIC_API_KEY HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
