#!/usr/bin/env bash
# Whole-process benchmark of `etch serve --9p` (issue 36): the time from
# a model delta leaving the model server to its bytes reaching a blocked
# read of the session's 9P `chat`, against the same delta reaching an
# SSE client of the session's events, measured in the same runs (the
# reference). Target: the 9P path adds under 1 ms over the SSE path.
#
# The model server is this script's own (a thread answering in the
# OpenAI shape, 40 pieces 5 ms apart, each marked), so the send times and
# both readers' arrival times come from one clock. The 9P client is a
# few lines of Python written from intro(5).
#
# Usage: bench/ninep.sh [RUNS]   (default 10 runs of 40 deltas)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
. bench/lib.sh
python3 - "$etch" "$work" "$runs" <<'PY'
import http.client, json, socket, statistics, struct, subprocess, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

etch, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
PIECES, GAP = 40, 0.005
sent = {}  # marker -> perf_counter when its delta was flushed

def chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

class Model(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        run = body["messages"][-1]["content"]
        if isinstance(run, list):
            run = run[0]["text"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(PIECES):
            marker = f"<{run}.{i}>"
            self.wfile.write(b"data: " + json.dumps(chunk({"content": marker})).encode() + b"\n\n")
            self.wfile.flush()
            sent[marker] = time.perf_counter()
            time.sleep(GAP)
        self.wfile.write(b"data: " + json.dumps(chunk({}, "stop")).encode() + b"\n\ndata: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

model = ThreadingHTTPServer(("127.0.0.1", 0), Model)
threading.Thread(target=model.serve_forever, daemon=True).start()

p = subprocess.Popen([etch, "serve", "--listen", "127.0.0.1:0", "--9p", "127.0.0.1:0", "--json",
                      "--provider", "openai", "--api-key", "unused", "--model", "bench",
                      "--base-url", f"http://127.0.0.1:{model.server_address[1]}/v1"],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
line = json.loads(p.stdout.readline())
host, port = line["url"][len("http://"):].split(":")
auth = {"Authorization": "Bearer " + line["token"]}
nhost, nport = line["ninep"].rsplit(":", 1)

def call(method, path, body=None):
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.request(method, path, body=None if body is None else json.dumps(body), headers=auth)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data else None)

class NineP:
    """A 9P2000 client from intro(5): just what reading a file takes."""
    def __init__(self, host, port, aname):
        self.s = socket.create_connection((host, int(port)))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rpc(100, 0xFFFF, struct.pack("<I", 65536) + self.str("9P2000"))
        self.rpc(104, 1, struct.pack("<II", 0, 0xFFFFFFFF) + self.str("bench") + self.str(aname))
    @staticmethod
    def str(s):
        b = s.encode()
        return struct.pack("<H", len(b)) + b
    def recv(self, n):
        out = b""
        while len(out) < n:
            got = self.s.recv(n - len(out))
            if not got:
                raise SystemExit("the 9P server hung up")
            out += got
        return out
    def rpc(self, ty, tag, body):
        self.s.sendall(struct.pack("<IBH", 7 + len(body), ty, tag) + body)
        size, rty, rtag = struct.unpack("<IBH", self.recv(7))
        rest = self.recv(size - 7)
        if rty == 107:
            raise SystemExit("9P error: " + rest[2:].decode())
        return rest
    def open(self, fid, *names):
        self.rpc(110, 2, struct.pack("<IIH", 0, fid, len(names)) + b"".join(self.str(n) for n in names))
        self.rpc(112, 2, struct.pack("<IB", fid, 0))
    def read(self, fid, offset):
        data = self.rpc(116, 3, struct.pack("<IQI", fid, offset, 65000))
        return data[4:]

def sse(sid):
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.request("GET", f"/v1/sessions/{sid}/events", headers=auth)
    r = c.getresponse()
    assert r.status == 200
    return r

def collect(read, arrived, done):
    """Reads text until the run's end, noting when each marker came."""
    text, ended = "", False
    while not ended:
        piece = read()
        now = time.perf_counter()
        text += piece
        while "<" in text and ">" in text[text.index("<"):]:
            start = text.index("<")
            end = text.index(">", start)
            marker = text[start:end + 1]
            text = text[end + 1:]
            ended = ended or marker == "</end>"
            arrived.setdefault(marker, now)
    done.set()

def sse_text(response):
    """The text deltas of an SSE stream, one read at a time."""
    def read():
        while True:
            line = response.readline().decode()
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event.get("type") == "message_update" and event["delta"]["type"] == "text_delta":
                    return event["delta"]["delta"]
                if event.get("type") == "agent_end":
                    return "</end>"
    return read

status, created = call("POST", "/v1/sessions", {})
assert status == 201, created
sid = created["id"]
nine = NineP(nhost, nport, line["token"])
nine.open(1, "sessions", sid, "chat")
offset = [0]
def nine_read():
    data = nine.read(1, offset[0]).decode()
    offset[0] += len(data)
    return data.replace("--- end ---", "</end>")

over_nine, over_sse = [], []
for run in range(runs + 1):
    stream = sse(sid)
    at_nine, at_sse = {}, {}
    d1, d2 = threading.Event(), threading.Event()
    t1 = threading.Thread(target=collect, args=(nine_read, at_nine, d1))
    t2 = threading.Thread(target=collect, args=(sse_text(stream), at_sse, d2))
    t1.start(); t2.start()
    status, body = call("POST", f"/v1/sessions/{sid}/prompt", {"message": f"r{run}"})
    assert status == 202, body
    t1.join(); t2.join()
    stream.close()
    if run == 0:
        continue  # warm-up
    for marker, t in sent.items():
        if marker.startswith(f"<r{run}.") and marker in at_nine and marker in at_sse:
            over_nine.append((at_nine[marker] - t) * 1000)
            over_sse.append((at_sse[marker] - t) * 1000)
p.terminate()
p.wait()

def row(name, xs):
    xs = sorted(xs)
    return f"{name:28s} median {statistics.median(xs):6.3f} ms   p90 {xs[int(len(xs) * 0.9)]:6.3f} ms   ({len(xs)} deltas)"
print(row("delta -> SSE client:", over_sse))
print(row("delta -> blocked 9P chat read:", over_nine))
added = statistics.median(over_nine) - statistics.median(over_sse)
print(f"9P added over SSE (medians): {added:+.3f} ms  (target < 1 ms)")
PY
