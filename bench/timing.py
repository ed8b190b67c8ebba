"""Timing helpers shared by the whole-process benchmarks (bench/*.sh):
the median wall time of a command after warm-up runs, the etch command
line against the local bench server (bench/server.py), and prompts timed
in one running `etch rpc` session."""
import json, statistics, subprocess, time

def median_ms(argv, runs, env=None):
    """Median wall time of `argv` in ms over `runs` runs, after 3 warm-up runs."""
    for _ in range(3):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)

def etch_cmd(etch, port, scenario, prompt="go", extra=()):
    """etch -p PROMPT against the bench server's SCENARIO."""
    return [etch, "--provider", "openai", "--api-key", "unused", "--model", "bench",
            "--base-url", f"http://127.0.0.1:{port}/{scenario}/v1", *extra, "-p", prompt]

def read_until(p, pred):
    """Reads JSON lines from `p` until one matches `pred`; returns it."""
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("etch ended early")
        v = json.loads(line)
        if pred(v):
            return v

def rpc_turns(etch, flags, count):
    """In one `etch rpc` session, `count` prompts after 3 warm-up ones:
    lists of ms from the prompt written to its ack, to agent_start and to
    agent_end."""
    p = subprocess.Popen([etch, "rpc", *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
    read_until(p, lambda v: v.get("type") == "session_info")
    acks, firsts, ends = [], [], []
    for i in range(count + 3):
        t = time.perf_counter()
        p.stdin.write(json.dumps({"id": str(i), "type": "prompt", "message": "go"}) + "\n")
        p.stdin.flush()
        read_until(p, lambda v: v.get("type") == "response")
        ack = time.perf_counter() - t
        read_until(p, lambda v: v.get("type") == "agent_start")
        first = time.perf_counter() - t
        read_until(p, lambda v: v.get("type") == "agent_end")
        end = time.perf_counter() - t
        if i >= 3:
            acks.append(ack * 1000); firsts.append(first * 1000); ends.append(end * 1000)
    p.stdin.close()
    p.wait()
    return acks, firsts, ends
