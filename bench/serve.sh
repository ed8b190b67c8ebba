#!/usr/bin/env bash
# Whole-process benchmarks of `etch serve` (issue 31) against the local
# OpenAI-compatible server of bench/server.py, each with its reference
# measured in the same run:
#   1. memory: RSS of a server holding 1,000 idle sessions, against the
#      same server holding one (target: under 200 MiB);
#   2. 100 concurrent streamed runs (the `paced` model: 20 pieces 10 ms
#      apart): per-run latency, prompt posted to agent_end on the
#      session's stream, median and p99 against single runs one at a
#      time (targets: 1.5x and 3x), and the slowest run (no starving);
#   3. 100 event streams on one session running five `big` answers
#      (512 KB each): every client gets every frame, and the time to the
#      last client's last frame with a stalled client (connected, never
#      reading) against without it;
#   4. GET /v1/sessions over 10,000 session files, against 100 (target:
#      under 200 ms).
#
# Usage: bench/serve.sh [PARTS]   (default 1234; a few minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
parts="${1:-1234}"
. bench/lib.sh
python3 - "$etch" "$port" "$work" "$parts" <<'PY'
import http.client, json, os, random, socket, statistics, subprocess, sys, threading, time

etch, port, work, parts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

def flags(scenario):
    return ["--provider", "openai", "--api-key", "unused", "--model", "bench",
            "--base-url", f"http://127.0.0.1:{port}/{scenario}/v1"]

class Serve:
    """An `etch serve` in directory `cwd` with HOME's config `config`."""
    def __init__(self, cwd, scenario="text", config=""):
        os.makedirs(os.path.join(work, ".etch"), exist_ok=True)
        with open(os.path.join(work, ".etch", "config.toml"), "w") as f:
            f.write(config)
        self.p = subprocess.Popen([etch, "serve", "--listen", "127.0.0.1:0", "--json", *flags(scenario)],
                                  cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = json.loads(self.p.stdout.readline())
        self.host, self.port = line["url"][len("http://"):].split(":")
        self.auth = {"Authorization": "Bearer " + line["token"]}

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection(self.host, int(self.port), timeout=120)
        c.request(method, path, body=None if body is None else json.dumps(body), headers=self.auth)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, (json.loads(data) if data else None)

    def create(self):
        status, body = self.call("POST", "/v1/sessions", {})
        assert status == 201, body
        return body["id"]

    def events(self, sid):
        """The session's live stream: an iterator of (event, data)."""
        c = http.client.HTTPConnection(self.host, int(self.port), timeout=120)
        c.request("GET", f"/v1/sessions/{sid}/events", headers=self.auth)
        r = c.getresponse()
        assert r.status == 200
        def frames():
            event, data = None, []
            while True:
                line = r.readline()
                if not line:
                    return
                line = line.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and data:
                    yield event, "\n".join(data)
                    event, data = None, []
        return frames()

    def rss_mib(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024

    def cpu_ms(self):
        """User and system CPU time of the server so far."""
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.p.terminate()
        self.p.wait()

def until_end(frames):
    """Frames up to the live agent_end; how many."""
    n = 0
    for event, data in frames:
        n += 1
        if event == "live" and json.loads(data).get("type") == "agent_end":
            return n
    raise SystemExit("a stream ended before agent_end")

def timed_run(serve, sid, frames, start=None):
    if start is not None:
        start.wait()
    t = time.perf_counter()
    status, body = serve.call("POST", f"/v1/sessions/{sid}/prompt", {"message": "go"})
    assert status == 202, body
    until_end(frames)
    return (time.perf_counter() - t) * 1000

def workspace(name):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    return d

# 1. Memory of idle sessions.
if "1" in parts:
  serve = Serve(workspace("memory"))
  serve.create()
  one = serve.rss_mib()
  for _ in range(1000):
      serve.create()
  thousand = serve.rss_mib()
  serve.stop()
  print(f"1. RSS with 1 session:                {one:8.1f} MiB")
  print(f"   RSS with 1,000 idle sessions:      {thousand:8.1f} MiB  ({(thousand - one) * 1024 / 1000:.0f} KiB per session; "
        f"target < 200 MiB; OpenCode ~630 MB at 229)")

# 2. Concurrent streamed runs.
if "2" in parts:
  serve = Serve(workspace("runs"), "paced", "[serve]\nmax_running = 128\n")
  singles = []
  for _ in range(12):
      sid = serve.create()
      frames = serve.events(sid)
      singles.append(timed_run(serve, sid, frames))
  singles = singles[2:]
  def burst():
      """100 runs started together: their sorted latencies, and the CPU
      etch and this client spent meanwhile, and the wall time."""
      sessions = [serve.create() for _ in range(100)]
      streams = [serve.events(sid) for sid in sessions]
      start = threading.Barrier(100)
      times = [0.0] * 100
      def one_run(i):
          times[i] = timed_run(serve, sessions[i], streams[i], start)
      threads = [threading.Thread(target=one_run, args=(i,)) for i in range(100)]
      cpu, client, wall = serve.cpu_ms(), time.process_time(), time.perf_counter()
      [t.start() for t in threads]
      [t.join() for t in threads]
      cpu, client = serve.cpu_ms() - cpu, (time.process_time() - client) * 1000
      return sorted(times), cpu, client, (time.perf_counter() - wall) * 1000
  # Three bursts: the figures are their medians, each burst's shown.
  bursts = [burst() for _ in range(3)]
  serve.stop()
  single = statistics.median(singles)
  medians = [statistics.median(b[0]) for b in bursts]
  p99s = [b[0][98] for b in bursts]
  median, p99 = statistics.median(medians), statistics.median(p99s)
  slowest = max(b[0][-1] for b in bursts)
  _, cpu, client, wall = bursts[-1]
  print(f"2. one run at a time, median:         {single:8.1f} ms")
  each = lambda xs: ", ".join(f"{x / single:.2f}x" for x in xs)
  print(f"   100 at once, median:               {median:8.1f} ms  ({median / single:.2f}x; target 1.5x; "
        f"bursts {each(medians)})")
  print(f"   100 at once, p99:                  {p99:8.1f} ms  ({p99 / single:.2f}x; target 3x; "
        f"bursts {each(p99s)})")
  print(f"   100 at once, slowest of all:       {slowest:8.1f} ms  ({slowest / single:.2f}x)")
  print(f"   CPU in the last burst's {wall:.0f} ms on {os.cpu_count()} cores: etch serve {cpu:.0f} ms, "
        f"this client {client:.0f} ms (the model server besides)")

# 3. Many clients on one running session.
def fan_out(stalled):
    serve = Serve(workspace(f"fan-{stalled}"), "big")
    sid = serve.create()
    streams = [serve.events(sid) for _ in range(100)]
    hold = None
    if stalled:
        # Connected and subscribed, then never read.
        hold = socket.create_connection((serve.host, int(serve.port)))
        hold.sendall((f"GET /v1/sessions/{sid}/events HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: {serve.auth['Authorization']}\r\n\r\n").encode())
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        while serve.call("GET", "/v1/sessions")[1]["sessions"][0]["counts"]["clients"] < 101:
            time.sleep(0.01)
    counts = [0] * 100
    done = [0.0] * 100
    def read(i):
        for _ in range(5):
            counts[i] += until_end(streams[i])
        done[i] = time.perf_counter()
    readers = [threading.Thread(target=read, args=(i,)) for i in range(100)]
    [r.start() for r in readers]
    t = time.perf_counter()
    for _ in range(5):
        status, _ = serve.call("POST", f"/v1/sessions/{sid}/prompt", {"message": "go"})
        assert status == 202
        while serve.call("GET", "/v1/sessions")[1]["sessions"][0]["state"] == "running":
            time.sleep(0.005)
    [r.join() for r in readers]
    serve.stop()
    if hold:
        hold.close()
    return counts, (max(done) - t) * 1000

if "3" in parts:
  clean_counts, clean = fan_out(False)
  stalled_counts, with_stalled = fan_out(True)
  same = len(set(clean_counts)) == 1 and len(set(stalled_counts)) == 1
  print(f"3. 100 clients, 5 big runs:           {clean:8.1f} ms to the last client's last frame "
        f"({clean_counts[0]} frames each)")
  print(f"   the same with a stalled client:    {with_stalled:8.1f} ms  ({with_stalled / clean:.2f}x); "
        f"every client every frame: {'yes' if same else 'NO'}")

# 4. The list over many session files.
def ulid():
    t = int(time.time() * 1000)
    n = (t << 80) | random.getrandbits(80)
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "".join(alphabet[(n >> (5 * i)) & 31] for i in reversed(range(26)))

def listed(count):
    cwd = workspace(f"list-{count}")
    sessions = os.path.join(cwd, ".etch", "sessions")
    os.makedirs(sessions, exist_ok=True)
    with open(os.path.join(sessions, "index.jsonl"), "w") as index:
        for _ in range(count):
            sid = ulid()
            path = os.path.join(sessions, sid + ".jsonl")
            with open(path, "w") as f:
                f.write(json.dumps({"type": "session.started", "id": ulid(), "time": "2026-12-05T00:00:00Z",
                                    "data": {"sessionId": sid, "formatVersion": 1, "cwd": cwd,
                                             "etchVersion": "0", "provider": "echo", "model": "echo"}}) + "\n")
            index.write(json.dumps({"id": sid, "path": path, "createdAt": "2026-12-05T00:00:00Z",
                                    "cwd": cwd, "title": f"session {sid[-6:]}"}) + "\n")
    serve = Serve(cwd)
    for _ in range(2):
        serve.call("GET", "/v1/sessions")
    times = []
    for _ in range(10):
        t = time.perf_counter()
        status, body = serve.call("GET", "/v1/sessions")
        times.append((time.perf_counter() - t) * 1000)
        assert status == 200 and len(body["sessions"]) == count
    serve.stop()
    return statistics.median(times)

if "4" in parts:
  small, large = listed(100), listed(10000)
  print(f"4. GET /v1/sessions, 100 sessions:    {small:8.1f} ms")
  print(f"   GET /v1/sessions, 10,000 sessions: {large:8.1f} ms  ({large / small:.1f}x; target < 200 ms)")
PY
