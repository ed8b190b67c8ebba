#!/usr/bin/env bash
# Whole-process benchmark of the interactive chat: the release binary in a
# pseudo-terminal of 100x30 (TERM=xterm-256color, its own HOME, no
# credentials), driven by bench/chat_pty.py, on an empty project and on
# `etch resume` of a generated 10,000-event session ("loaded"):
#   - start-up to the first frame: spawn until the header's "/help for
#     commands" is drawn (`etch --provider echo`, `etch resume PREFIX
#     --provider echo`), median and p95
#   - keypress to frame: one character written to the pty until its frame
#     shows it, 50 times per chat, both chats open with keys alternating
#     and spaced past the 16 ms frame clock, median and p95
#   - peak RSS (VmHWM) of both chats just before quitting with Ctrl-D
#   - 512 KB of answer text streamed in 1 KB deltas by a local
#     OpenAI-compatible server (in chat_pty.py) as fast as it can: Enter to
#     the turn footer ("─ …"), beside the server's own streaming time
# The reference is the empty chat: loaded/empty for start-up, keypress and
# RSS (keypress to frame must be equal within noise).
#
# Usage: bench/chat.sh [RUNS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
root="$PWD"
. bench/lib.sh   # (its bench/server.py is not used: chat_pty.py serves the stream)
python3 "$root/bench/chat_pty.py" "$etch" "$work" "$runs"
