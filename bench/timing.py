"""Timing helpers shared by the whole-process benchmarks (bench/*.sh):
the median wall time of a command after warm-up runs, and the etch
command line against the local bench server (bench/server.py)."""
import statistics, subprocess, time

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
