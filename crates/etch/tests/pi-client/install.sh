#!/bin/sh
# Installs Pi's own RPC client (npm's @mariozechner/pi-coding-agent, the
# version pinned by package-lock.json beside this script), which etch's
# RPC tests drive `etch rpc` with, into DIR (the tests use
# target/pi-client), next to client.mjs and shim.mjs. Idempotent and safe to run concurrently; nothing is fetched
# at test time once this has run (.ci/run runs it before the tests).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: install.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
exec 9>"$dir/.lock"
flock 9
want=$(cat "$here/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ ! -f "$dir/.installed" ] || [ "$(cat "$dir/.installed")" != "$want" ]; then
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > "$dir/.installed"
fi
# The scripts change with the tests; copy them every time.
cp "$here/client.mjs" "$here/running.mjs" "$here/wait.mjs" "$here/shim.mjs" "$here/session.mjs" "$here/tree.mjs" "$dir/"
