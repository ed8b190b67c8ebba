"""The measurements of bench/chat_resize.sh: the chat in tmux (120x60,
TERM=xterm-256color) streaming a 40-paragraph answer from a local
OpenAI-compatible server while the window narrows in two bursts of
steps (120, 98, 96, 94, 92, 90 once paragraph-03 is on screen; 88, 86,
84 once paragraph-12 is), as dragging a window's edge does. Then the
whole scrollback is read back: each paragraph must be there once, one
footer, no spinner line and no preview row left behind. Also timed:
Enter to the turn's end, and the bytes etch wrote to the terminal.
Standard library only.

Usage: python3 bench/chat_resize.py ETCH WORKDIR RUNS"""
import http.server, json, os, statistics, subprocess, sys, threading, time

etch, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
PARAGRAPHS = 40
CHUNK = 30              # characters per text delta
GAP = 0.005             # seconds between deltas (about 4 s in all)
SOCKET = f"etch-bench-resize-{os.getpid()}"
FIRST = [int(w) for w in os.environ.get("ETCH_BENCH_FIRST", "98 96 94 92 90").split()]
SECOND = [int(w) for w in os.environ.get("ETCH_BENCH_SECOND", "88 86 84").split()]
STEP = 0.2              # seconds between two resize steps
# Paragraphs longer than the window is wide: each wraps, and a reflow
# rewraps it.
FILLER = ("the loop reads the next event from the channel and hands it to the app, "
          "which updates its state and draws the next frame of the live area ")
TEXT = "".join(f"paragraph-{i:02} of the streamed answer: {FILLER}\n\n"
               for i in range(1, PARAGRAPHS + 1))


def frame(delta, finish=None):
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m1",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        for i in range(0, len(TEXT), CHUNK):
            delta = {"content": TEXT[i:i + CHUNK]}
            if i == 0:
                delta["role"] = "assistant"
            send(frame(delta))
            time.sleep(GAP)
        send(frame({}, "stop"))
        usage = {"id": "c", "object": "chat.completion.chunk", "model": "m1", "choices": [],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 400, "total_tokens": 410}}
        send(b"data: " + json.dumps(usage).encode() + b"\n\n")
        send(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCKET, *args], check=True,
                          capture_output=True, text=True).stdout


def history():
    return tmux("capture-pane", "-p", "-t", "b", "-S", "-", "-E", "-")


def wait(what, ready, timeout=60.0):
    deadline = time.perf_counter() + timeout
    while True:
        text = history()
        if ready(text):
            return time.perf_counter()
        if "[etch exited" in text:
            raise SystemExit(f"etch exited while waiting for {what}:\n{text[-2000:]}")
        if time.perf_counter() > deadline:
            raise SystemExit(f"timed out waiting for {what}:\n{text[-2000:]}")
        time.sleep(0.01)


def narrow(widths):
    for width in widths:
        tmux("resize-window", "-t", "b", "-x", str(width), "-y", "60")
        time.sleep(STEP)


def one_run(port, n):
    out = os.path.join(work, f"pane-{n}.bytes")
    argv = [etch, "--provider", "openai", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--api-key", "k", "--model", "m1"]
    command = " ".join(f"'{a}'" for a in argv) + "; echo '[etch exited '$?']'; sleep 600"
    env = f"env -u OPENAI_API_KEY HOME='{work}' TERM=xterm-256color NO_PROXY=127.0.0.1"
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "120", "-y", "60",
         "-c", os.path.join(work, "ws"), f"{env} sh -c \"{command}\"")
    tmux("set-option", "-t", "b", "history-limit", "100000")
    tmux("pipe-pane", "-o", "-t", "b", f"cat >> '{out}'")
    try:
        wait("the chat", lambda h: "/help for commands" in h)
        tmux("send-keys", "-t", "b", "-l", "stream the answer")
        t0 = time.perf_counter()
        tmux("send-keys", "-t", "b", "Enter")
        wait("paragraph-03", lambda h: "paragraph-03" in h)
        narrow(FIRST)
        wait("paragraph-12", lambda h: "paragraph-12" in h)
        narrow(SECOND)
        done = wait("the turn's end", lambda h: any(
            line.startswith("─ ") and "request" in line for line in h.splitlines()))
        time.sleep(0.3)   # the last frame
        text = history()
        tmux("send-keys", "-t", "b", "C-d")
        wait("etch to quit", lambda h: "[etch exited" in h, timeout=10)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
    lines = text.splitlines()
    if os.environ.get("ETCH_BENCH_DUMP"):
        print(text, file=sys.stderr)
    counts = [sum(f"paragraph-{i:02} of the streamed answer" in l for l in lines)
              for i in range(1, PARAGRAPHS + 1)]
    return {
        "enter to turn end (s)": done - t0,
        "paragraph lines (want 40)": sum(counts),
        "paragraphs missing": sum(c == 0 for c in counts),
        "footer lines (want 1)": sum(l.startswith("m1 · ") for l in lines),
        "working/spinner lines (want 0)": sum("esc to interrupt" in l for l in lines),
        "preview rows ┊ (want 0)": sum("┊" in l for l in lines),
        "bytes written": os.path.getsize(out) if os.path.exists(out) else 0,
    }


def main():
    os.makedirs(os.path.join(work, "ws"), exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    results = [one_run(port, n) for n in range(runs)]
    server.shutdown()
    print(f"etch: {etch}")
    print(f"40 paragraphs streamed ({len(TEXT)} bytes in {CHUNK}-char deltas every "
          f"{GAP * 1000:.0f} ms), narrowed 120->90 then ->84 mid-stream; {runs} runs")
    print(f"{'measure':34} {'median':>10} {'min':>10} {'max':>10}")
    for key in results[0]:
        values = [r[key] for r in results]
        fmt = (lambda v: f"{v:10.2f}") if isinstance(values[0], float) else (lambda v: f"{v:10g}")
        print(f"{key:34} {fmt(statistics.median(values))} {fmt(min(values))} {fmt(max(values))}")
    stale = [r["footer lines (want 1)"] - 1 + r["paragraph lines (want 40)"] - 40
             + r["working/spinner lines (want 0)"] + r["preview rows ┊ (want 0)"] for r in results]
    print(f"stale copies: median {statistics.median(stale)}, max {max(stale)}")


main()
