#!/usr/bin/env bash
# Starts the service the way the README says (npm start), checks that it answers, stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
data=$(mktemp -d)
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
# Its own process group: npm start runs the service as a grandchild, which must stop with it.
setsid npm start --silent -- --headless --data "$data" -p "$port" >"$data/serve.log" 2>&1 &
pid=$!
trap 'kill -- -$pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 60); do
  if curl -fsS "http://127.0.0.1:$port/cuckoo/status" >"$data/status.json" 2>/dev/null; then
    echo "smoke: service answered on port $port: $(head -c 200 "$data/status.json")"
    # The UI the README points at: the built page, not the "not built" notice.
    curl -fsS "http://127.0.0.1:$port/" | grep -q '<div id="root"></div>' || { echo "smoke: / does not serve the built UI" >&2; exit 1; }
    echo "smoke: the UI is served at http://127.0.0.1:$port/"
    exit 0
  fi
  sleep 1
done
echo "smoke: the service did not answer; its log:" >&2
cat "$data/serve.log" >&2
exit 1
