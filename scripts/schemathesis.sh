#!/usr/bin/env bash
# Runs schemathesis (PyPI) against /openapi.json of a headless instance with a fresh data dir:
# every documented operation, each API generation in its own run, all checks (no 5xx, statuses,
# content types and bodies as documented). Where PyPI (or Python's venv) is not available it says
# so in one line and exits 0: test/openapi-fuzz.test.ts covers the same ground inside `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "schemathesis: skipped: $*"; exit 0; }

command -v python3 >/dev/null || skip "python3 is not installed"
# pip itself is asked, so that a configured index or proxy (pip.conf, PIP_INDEX_URL) counts.
probe=$(mktemp -d)
if ! timeout 120 python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$probe" 'schemathesis>=4,<5' >/dev/null 2>&1; then
  rm -rf "$probe"
  skip "pip cannot fetch schemathesis from its package index (PyPI unreachable from this machine?)"
fi
rm -rf "$probe"

venv=node_modules/.cache/schemathesis-venv
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv" >/dev/null 2>&1 || skip "python3 cannot create a virtualenv (Debian: apt-get install python3-venv)"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'schemathesis>=4,<5' || skip "pip could not install schemathesis"
fi

[ -f out/cli/aviary.mjs ] || npm run --silent build:cli
data=$(mktemp -d)
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
node bin/aviary.js serve --data "$data" -p "$port" >"$data/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$data"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 1 60); do
  curl -fsS -o /dev/null "$base/cuckoo/status" 2>/dev/null && break
  kill -0 $pid 2>/dev/null || { cat "$data/serve.log" >&2; exit 1; }
  sleep 1
done
# Something to find: a file task and a URL task (ids 1 and 2).
printf 'MZ schemathesis seed' >"$data/seed.exe"
curl -fsS -o /dev/null -F "file=@$data/seed.exe" "$base/tasks/create/file"
curl -fsS -o /dev/null -d url=http://example.com/ "$base/tasks/create/url"

# /exit stops the service (debug only) and /events is a stream that never ends by itself.
status=0
for generation in newer v1; do
  if [ "$generation" = v1 ]; then paths=(--include-path-regex '^/v1/'); else paths=(--exclude-path-regex '^/v1/'); fi
  echo "schemathesis: $generation routes"
  "$venv/bin/st" run "$base/openapi.json" --url "$base" --checks all --max-examples 30 --request-timeout 20 \
    "${paths[@]}" --exclude-path /exit --exclude-path /events --no-color || status=1
done
exit $status
