#!/usr/bin/env bash
# Peak memory of `etch tool read` on the start of a 1 GB file (issue 3
# target: under 20 MiB more than reading a tiny file), whole process,
# measured with GNU time in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/time ]; then
  apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
fi
cargo build --release --locked -q -p etch
etch="$PWD/target/release/etch"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
python3 - <<'PY'
line = b"    let total = items.iter().map(|x| x.weight).sum::<u64>();\n"
chunk = line * 16384
with open("huge.log", "wb") as f:
    for _ in range((1 << 30) // len(chunk) + 1):
        f.write(chunk)
open("tiny.txt", "wb").write(line)
PY
peak() { /usr/bin/time -f %M "$etch" tool read "$1" 2>&1 >/dev/null | tail -n 1; }
small=$(peak tiny.txt); big=$(peak huge.log)
for _ in 1 2 3; do
  s=$(peak tiny.txt); b=$(peak huge.log)
  [ "$s" -gt "$small" ] && small=$s
  [ "$b" -gt "$big" ] && big=$b
done
extra=$((big - small))
echo "file size:                 $(stat -c %s huge.log) bytes"
echo "peak RSS, tiny file:       $((small / 1024)) MiB ($small KiB)"
echo "peak RSS, 1 GB file:       $((big / 1024)) MiB ($big KiB)"
echo "extra for the 1 GB file:   $((extra / 1024)) MiB ($extra KiB)   (target: < 20 MiB)"
