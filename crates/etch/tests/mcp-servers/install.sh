#!/bin/sh
# Installs the real MCP servers etch's MCP tests run, from the npm and
# PyPI registries, into DIR (the tests use target/mcp-servers): the
# versions pinned by package-lock.json and requirements.txt beside this
# script. Idempotent and safe to run concurrently; nothing is fetched at
# test time once this has run (.ci/run runs it before the tests).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: install.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
exec 9>"$dir/.lock"
flock 9
want=$(cat "$here/package-lock.json" "$here/requirements.txt" | sha256sum | cut -d' ' -f1)
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
    exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$dir/"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
rm -rf "$dir/venv"
python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
echo "$want" > "$dir/.installed"
