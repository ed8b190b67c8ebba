"""The measurements of bench/chat.sh: the release `etch` chat in a
pseudo-terminal of 100x30 (TERM=xterm-256color), driven by writing keys
to the pty and timing what comes back. Standard library only.

Usage: python3 bench/chat_pty.py ETCH WORKDIR RUNS
(WORKDIR is the empty project's parent: bench/lib.sh's temp dir, also
HOME; the loaded project and the local server live there too)."""
import fcntl, http.server, json, os, pty, re, select, signal, statistics, struct, sys
import termios, threading, time

etch, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
COLS, ROWS = 100, 30
KEYS = 50                      # keypresses per chat, alternating empty/loaded
EVENTS = 10_000                # events of the resumed session
STREAM = 512 * 1024            # bytes of answer text streamed
PIECE = 1024                   # bytes per text delta
READY = b"/help for commands"
SYNC_END = b"\x1b[?2026l"      # the end of every frame
DSR = b"\x1b[6n"               # "where is the cursor?", answered like a terminal
TURN_END = re.compile("\u2500 \\d".encode())   # "─ 1.2s · 1 request …"
WINSIZE = struct.pack("HHHH", ROWS, COLS, 0, 0)
ENV = {k: v for k, v in os.environ.items()
       if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "CODEX_ACCESS_TOKEN",
                    "ANTHROPIC_API_KEY", "NO_COLOR")}
ENV.update(TERM="xterm-256color", HOME=work)
children = []


class Chat:
    """One etch in a pty of its own; `out` is everything it wrote."""

    def __init__(self, argv, cwd):
        self.t0 = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # the child: size the terminal before etch asks
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, WINSIZE)
                os.chdir(cwd)
                os.execve(etch, [etch, *argv], ENV)
            finally:
                os._exit(127)
        self.pid, self.fd, self.out = pid, fd, bytearray()
        children.append(pid)

    def read_until(self, found, timeout=30.0, since=0):
        """Reads until `found(out, start)` is true; the time it was. `start`
        is where the search may begin (a little before the new bytes)."""
        deadline = time.perf_counter() + timeout
        start = since
        while True:
            if found(self.out, start):
                return time.perf_counter()
            start = max(since, len(self.out) - 64)
            left = deadline - time.perf_counter()
            if left <= 0:
                raise SystemExit(f"etch: timed out; last output: {bytes(self.out[-400:])!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    data = os.read(self.fd, 1 << 16)
                except OSError:
                    data = b""
                if not data:
                    raise SystemExit(f"etch ended early; last output: {bytes(self.out[-400:])!r}")
                self.answer(data)
                self.out += data

    def answer(self, data):
        """Answers cursor position requests (ESC[6n) as a terminal does:
        the chat asks where it starts, and after resizes."""
        for _ in range(data.count(DSR)):
            os.write(self.fd, b"\x1b[1;1R")

    def drain(self, quiet=0.05):
        """Reads whatever comes until the terminal is quiet for `quiet` s."""
        while select.select([self.fd], [], [], quiet)[0]:
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not data:
                return
            self.answer(data)
            self.out += data

    def write(self, data):
        os.write(self.fd, data)

    def peak_rss_mib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def quit(self):
        """Ctrl-D on the empty editor; waits for the process to end."""
        self.write(b"\x04")
        deadline = time.perf_counter() + 10
        while time.perf_counter() < deadline:
            self.drain(0.02)
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                children.remove(self.pid)
                os.close(self.fd)
                if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                    raise SystemExit(f"etch exited with status {status:#x}")
                return
        raise SystemExit("etch did not quit on Ctrl-D")


def contains(pattern):
    return lambda out, start: out.find(pattern, start) >= 0


def first_frame(argv, cwd):
    """Spawn to the first frame (the header drawn); the chat, still open."""
    chat = Chat(argv, cwd)
    t = chat.read_until(lambda out, start: (at := out.find(READY)) >= 0
                        and out.find(SYNC_END, at) >= 0)
    return chat, (t - chat.t0) * 1000


# --- the resumed project: a 10,000-event session in etch's log format ------

def write_session(project):
    """A session of EVENTS events on one branch, in the mix of the
    etch-session load bench (prompts, tool calls, usage, metrics, tool
    results of about 0.2, 1.5 and 4 KB, answers with markdown and a fenced
    code block), plus its index row; returns the session id."""
    sessions = os.path.join(project, ".etch", "sessions")
    os.makedirs(sessions)
    sid = "01KBENCH000000000000000000"
    path = os.path.join(sessions, sid + ".jsonl")
    stamp = "2026-12-02T10:00:00.000Z"
    snippet = "    let value = compute(\"input\", 42)?; // keep the old behaviour\n"
    results = [snippet * n for n in (3, 24, 64)]
    answer = ("The test fails because the **fixture path** is wrong; I fixed it:\n\n"
              "```rust\nlet path = root.join(\"fixtures\").join(name);\n```\n\n"
              "- `cargo test` passes now\n- nothing else changed")
    usage = {"inputTokens": 1200, "cachedInputTokens": 800, "outputTokens": 40,
             "reasoningOutputTokens": 0, "totalTokens": 1240}
    metrics = {"transport": "chat-sse", "requests": 1, "requestBytes": 5000, "responseBytes": 900}
    parent = None
    with open(path, "w") as f:
        for i in range(EVENTS):
            if i == 0:
                kind, data = "session.started", {
                    "sessionId": sid, "formatVersion": 1, "cwd": project, "etchVersion": "0.1.0",
                    "provider": "echo", "model": "echo", "openaiApi": None}
            elif i % 6 == 0:
                kind, data = "message.user", {"content": [{"type": "text",
                    "text": f"please look at file {i} and fix the failing test"}]}
            elif i % 6 == 1 and i < EVENTS - 3:
                kind, data = "message.assistant", {"content": [
                    {"type": "text", "text": "Let me read it."},
                    {"type": "tool_call", "id": f"call_{i}", "name": "read",
                     "arguments": {"path": f"src/file{i}.rs"}}],
                    "provider": "echo", "model": "echo", "stopReason": "toolUse"}
            elif i % 6 == 2:
                kind, data = "model.usage", usage
            elif i % 6 == 3:
                kind, data = "model.metrics", metrics
            elif i % 6 == 4:
                kind, data = "message.tool", {"toolCallId": f"call_{i - 3}", "toolName": "read",
                    "content": [{"type": "text", "text": results[(i // 6) % 3]}], "isError": False}
            else:  # the answer (also the last prompt's, so the log ends whole)
                kind, data = "message.assistant", {"content": [{"type": "text", "text": answer}],
                    "provider": "echo", "model": "echo", "stopReason": "stop"}
            eid = f"01K{i:023d}"
            f.write(json.dumps({"type": kind, "id": eid, "parentId": parent, "time": stamp,
                                "data": data}, separators=(",", ":")) + "\n")
            parent = eid
    with open(os.path.join(sessions, "index.jsonl"), "w") as f:
        f.write(json.dumps({"id": sid, "path": path, "createdAt": stamp, "cwd": project,
                            "title": "please look at file 6"}, separators=(",", ":")) + "\n")
    return sid, os.path.getsize(path)


# --- a local OpenAI-compatible server streaming 512 KB as fast as it can ----

def delta_text(i):
    """1 KB of answer text: prose with inline code, in paragraphs."""
    sentence = ("The loop reads the next `event` from the channel and hands it to the app, "
                "which updates its state. ")
    text = ""
    while len(text) + len(sentence) < PIECE - 2:
        text += sentence
    text += "\n\n" if i % 3 == 2 else " "
    return text + "x" * (PIECE - len(text))


BODY = b"".join(
    b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": delta_text(i)},
                                         "finish_reason": None}]}).encode() + b"\n\n"
    for i in range(STREAM // PIECE)
) + b"data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).encode() \
  + b"\n\ndata: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1,
                                                         "total_tokens": 11}}).encode() \
  + b"\n\ndata: [DONE]\n\n"
FRAMES = [f + b"\n\n" for f in BODY.split(b"\n\n") if f]
served = []   # seconds from the request read to the last byte written


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        t = time.perf_counter()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        for frame in FRAMES:   # one write per SSE frame: a real stream
            self.wfile.write(frame)
        self.wfile.flush()
        served.append(time.perf_counter() - t)


# --- the measurements ---------------------------------------------------------

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def main():
    empty_dir = os.path.join(work, "ws")
    loaded_dir = os.path.join(work, "loaded")
    stream_dir = os.path.join(work, "stream")
    os.makedirs(stream_dir)
    sid, size = write_session(loaded_dir)
    empty_argv = ["--provider", "echo"]
    loaded_argv = ["resume", sid[:10], "--provider", "echo"]

    # (i) start-up to the first frame, empty and loaded interleaved.
    starts = {"empty": [], "loaded": []}
    for n in range(runs + 2):
        for name, argv, cwd in (("empty", empty_argv, empty_dir), ("loaded", loaded_argv, loaded_dir)):
            chat, ms = first_frame(argv, cwd)
            chat.drain()
            chat.quit()
            if n >= 2:   # two warm-ups
                starts[name].append(ms)

    # (ii) keypress to frame, both chats open, keys alternating; (iv) peak RSS.
    chats = {}
    for name, argv, cwd in (("empty", empty_argv, empty_dir), ("loaded", loaded_argv, loaded_dir)):
        chats[name], _ = first_frame(argv, cwd)
    time.sleep(1.0)   # let the background grammar load finish, as a user would
    for chat in chats.values():
        chat.drain()
    keys = {"empty": [], "loaded": []}
    for k in range(KEYS + 5):
        if k % 40 == 0 and k:   # Ctrl-U: a fresh line now and then
            for chat in chats.values():
                mark = len(chat.out)
                chat.write(b"\x15")
                chat.read_until(contains(SYNC_END), since=mark)
                chat.drain(0.03)
        for name, chat in chats.items():
            typed = k % 40 + 1
            time.sleep(0.03)   # past the 16 ms frame clock: time the key, not the clock
            mark = len(chat.out)
            t = time.perf_counter()
            chat.write(b"x")
            done = chat.read_until(
                lambda out, start, typed=typed, mark=mark:
                    out.find(SYNC_END, mark) >= 0 and out.find(b"x" * typed, mark) >= 0,
                since=mark)
            if k >= 5:   # five warm-ups
                keys[name].append((done - t) * 1000)
    rss = {}
    for name, chat in chats.items():
        chat.write(b"\x15")
        chat.drain(0.1)
        rss[name] = chat.peak_rss_mib()
        chat.quit()

    # (iii) 512 KB streamed: Enter to the turn footer.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    stream_argv = ["--provider", "openai", "--api-key", "unused", "--model", "bench",
                   "--base-url", f"http://127.0.0.1:{port}/v1"]
    streams, stream_rss, history_bytes = [], [], []
    for n in range(runs + 1):
        chat, _ = first_frame(stream_argv, stream_dir)
        chat.drain()
        mark = len(chat.out)
        chat.write(b"go")
        chat.read_until(lambda out, start: (at := out.find(b"go", mark)) >= 0
                        and out.find(SYNC_END, at) >= 0, since=mark)
        chat.drain()
        mark = len(chat.out)
        t = time.perf_counter()
        chat.write(b"\r")
        done = chat.read_until(lambda out, start: TURN_END.search(out, start) is not None,
                               timeout=60, since=mark)
        chat.drain()
        if n >= 1:   # one warm-up
            streams.append(((done - t) * 1000, served[-1] * 1000))
            history_bytes.append(len(chat.out) - mark)
            stream_rss.append(chat.peak_rss_mib())
        chat.quit()
    server.shutdown()

    med = statistics.median
    etch_ms = med(s[0] for s in streams)
    server_ms = med(s[1] for s in streams)
    print(f"pty {COLS}x{ROWS}, TERM=xterm-256color; loaded = `etch resume` of a {EVENTS}-event "
          f"session ({size / 1e6:.1f} MB of JSONL)")
    print(f"runs per start-up and stream figure: {runs}; keypresses per chat: {KEYS}")
    print()
    print(f"{'':34} {'empty':>9} {'loaded':>9} {'loaded/empty':>13}")
    a, b = med(starts["empty"]), med(starts["loaded"])
    print(f"{'start-up to first frame, median':34} {a:6.2f} ms {b:6.2f} ms {b / a:13.2f}")
    a, b = pct(starts["empty"], 95), pct(starts["loaded"], 95)
    print(f"{'start-up to first frame, p95':34} {a:6.2f} ms {b:6.2f} ms {b / a:13.2f}")
    a, b = med(keys["empty"]), med(keys["loaded"])
    print(f"{'keypress to frame, median':34} {a:6.2f} ms {b:6.2f} ms {b / a:13.2f}")
    a, b = pct(keys["empty"], 95), pct(keys["loaded"], 95)
    print(f"{'keypress to frame, p95':34} {a:6.2f} ms {b:6.2f} ms {b / a:13.2f}")
    a, b = rss["empty"], rss["loaded"]
    print(f"{'peak RSS (VmHWM) before Ctrl-D':34} {a:5.1f} MiB {b:5.1f} MiB {b / a:13.2f}")
    print()
    print(f"512 KB streamed ({STREAM // PIECE} deltas of {PIECE} B), Enter to the turn footer:")
    print(f"  etch, median:            {etch_ms:8.2f} ms  ({STREAM / 1e6 / (etch_ms / 1000):6.1f} MB/s; "
          f"p95 {pct([s[0] for s in streams], 95):.2f} ms)")
    print(f"  server's own streaming:  {server_ms:8.2f} ms  (request read to last byte written)")
    print(f"  bytes written to the pty:{med(history_bytes) / 1e6:8.2f} MB  "
          f"peak RSS {med(stream_rss):5.1f} MiB")


try:
    main()
finally:
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
