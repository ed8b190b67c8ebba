#!/usr/bin/env bash
# Whole-process cost of images (issue 34), each against a reference
# measured in the same run, alternated, with bench/server.py answering at
# once (its `text` scenario):
#   - a 12 MP camera JPEG (4000x3000) attached with `-p --image`: read,
#     decoded, resized to the 2000 px long edge, encoded, stored in the
#     session's assets and sent, beside the same prompt with no image;
#   - the same through the `read` tool (one tool round), beside a `read`
#     of a small text file;
#   - a request with 10 images (1600x1200 JPEGs, within bounds: decoded
#     to check them, kept as they are, stored and sent as base64),
#     beside the same prompt with no image.
# The images are written by etch-image's `sample` example, a gradient
# with texture that compresses like a photograph.
#
# Usage: bench/images.sh [RUNS]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
case "$runs" in
    '' | *[!0-9]* | 0) echo "bench/images.sh: RUNS must be a positive integer" >&2; exit 2 ;;
esac
cargo build --release --locked -q -p etch-image --example sample
sample="$PWD/target/release/examples/sample"
source bench/lib.sh
"$sample" 4000 3000 jpeg camera.jpg
for i in $(seq 10); do "$sample" 1600 1200 jpeg "shot$i.jpg"; done
seq 100 > notes.txt
python3 - "$etch" "$port" "$runs" <<'PY'
import statistics, subprocess, sys, time
etch, port, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = ["--provider", "openai", "--api-key", "k", "--model", "m"]
text = [etch, *base, "--base-url", f"http://127.0.0.1:{port}/text/v1", "-p", "what is this?"]
read = lambda path: [etch, *base, "--base-url", f"http://127.0.0.1:{port}/read-{path}/v1", "-p", "read it"]

def once(argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000

def pair(name, reference, measured):
    once(reference); once(measured)  # warm the page cache for both
    ref, got = [], []
    for _ in range(runs):
        ref.append(once(reference)); got.append(once(measured))
    med = statistics.median
    print(f"{name:<44} {med(got):8.1f} ms  (reference {med(ref):6.1f} ms, "
          f"+{med(got) - med(ref):7.1f} ms, {med(got) / med(ref):5.1f}x)")

print(f"runs per figure: {runs}")
pair("-p --image 12 MP JPEG (resized to 2000 px)", text, text + ["--image", "camera.jpg"])
pair("read of a 12 MP JPEG (one tool round)", read("notes.txt"), read("camera.jpg"))
tens = [a for i in range(1, 11) for a in ("--image", f"shot{i}.jpg")]
pair("-p with 10 images of 1600x1200", text, text + tens)
PY
