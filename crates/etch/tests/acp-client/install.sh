#!/bin/sh
# Installs the ACP client library etch's ACP tests drive `etch acp` with
# (npm's @agentclientprotocol/sdk, the version pinned by package-lock.json
# beside this script) into DIR (the tests use target/acp-client), next to
# client.mjs. Idempotent and safe to run concurrently; nothing is fetched
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
# The script changes with the tests; copy it every time.
cp "$here/client.mjs" "$dir/client.mjs"
