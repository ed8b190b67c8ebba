#!/usr/bin/env bash
# Whole-process benchmark of the chat through resizes: a 40-paragraph
# answer streams from a local OpenAI-compatible server (in
# bench/chat_resize.py) while tmux narrows the window in two bursts of
# steps, as dragging its edge does; then the scrollback is read back.
# Prints Enter to the turn's end, the paragraph lines (each answer line
# must be there once), footers, spinner and preview rows left behind
# ("stale copies", want 0) and the bytes etch wrote, median/min/max.
# The reference is the answer itself: 40 paragraph lines, one footer.
#
# Usage: bench/chat_resize.sh [RUNS]   (default 5)
#        ETCH=/path/to/etch bench/chat_resize.sh   (another build: no build)
# Needs tmux.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
command -v tmux >/dev/null || { echo "bench/chat_resize.sh needs tmux" >&2; exit 1; }
if [ -z "${ETCH:-}" ]; then
    cargo build --release --locked -q -p etch
    ETCH="$PWD/target/release/etch"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset OPENAI_API_KEY OPENROUTER_API_KEY CODEX_ACCESS_TOKEN ANTHROPIC_API_KEY HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
python3 bench/chat_resize.py "$ETCH" "$work" "$runs"
