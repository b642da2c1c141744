#!/bin/bash
# Evidence that `memvault serve` makes no network call but to its LLM (docs/architecture.md, Trust boundaries):
# 60 s of `memvault serve` under strace, with a fake OpenAI server on loopback as its LLM, a REST add
# and search (they load the embedding model) and a chat completion through the proxy; then a summary
# of every connect() and DNS lookup, and the files left under the fresh HOME (onnxruntime's telemetry
# would leave ~/.cache/Microsoft/DeveloperTools/.onnxruntime).
#
#   scripts/strace_serve.sh [CODE_DIR] [OUT_DIR]      (needs strace: apt-get install -y strace)
set -u
CODE=$(cd "${1:-$(dirname "$0")/..}" && pwd); W=${2:-/tmp/memvault-strace}; PY=${PYTHON:-python}
cd /tmp  # not a source tree: `python -m` puts the current folder first on sys.path
rm -rf "$W"; mkdir -p "$W/home"
export HOME=$W/home XDG_CACHE_HOME=$W/home/.cache XDG_CONFIG_HOME=$W/home/.config XDG_DATA_HOME=$W/home/.local/share
unset ORT_DISABLE_TELEMETRY LITELLM_LOCAL_MODEL_COST_MAP
PYTHONPATH=$CODE $PY -c "
import time
from tests.support.upstream import Upstream, serving
with serving(Upstream().app()) as root:
    open('$W/upstream.url', 'w').write(root); time.sleep(100)
" &
UPSTREAM=$!
for _ in $(seq 60); do [ -s "$W/upstream.url" ] && break; sleep 0.5; done
export MEMVAULT_LLM_API_BASE=$(cat "$W/upstream.url")/v1 MEMVAULT_LLM_MODEL=fake
START=$(date +%s)
PYTHONPATH=$CODE strace -f -qq -e trace=network -o "$W/strace.txt" $PY -m memvault serve --vault "$W/vault" --port 18777 \
    > "$W/serve.log" 2>&1 &
TRACER=$!
URL=http://127.0.0.1:18777
for _ in $(seq 120); do curl -s $URL/health > /dev/null && break; sleep 0.5; done
curl -s -X POST $URL/v1/memories/ -H 'content-type: application/json' \
    -d '{"messages": "my bank is in Zurich", "user_id": "alice", "infer": false}' > "$W/add.json"
curl -s "$URL/v1/memories/search/?query=bank&user_id=alice" > "$W/search.json"
curl -s -X POST $URL/v1/chat/completions -H 'content-type: application/json' \
    -d '{"model": "fake", "messages": [{"role": "user", "content": "where is my bank?"}]}' > "$W/chat.json"
sleep $(( 60 - ($(date +%s) - START) ))
kill -INT "$(pgrep -P $TRACER)"; wait $TRACER
kill $UPSTREAM 2> /dev/null
echo "served $(( $(date +%s) - START )) s; LLM at $MEMVAULT_LLM_API_BASE"
grep -q '"memory":"my bank is in Zurich"' "$W/search.json" && echo "search answered (model loaded)"
grep -q '"chat.completion"' "$W/chat.json" && echo "chat completion answered"
echo "connect() calls by destination:"
grep -o 'connect([0-9]*, {sa_family=[A-Z0-9_]*[^}]*}' "$W/strace.txt" | sed -E 's/connect\([0-9]+, //' | sort | uniq -c
echo "connects beyond loopback: $(grep -E 'connect\(.*AF_INET' "$W/strace.txt" | grep -v -E '127\.0\.0\.1|::1' -c)"
echo "DNS (port 53) syscalls: $(grep -c 'htons(53)' "$W/strace.txt")"
echo "files under HOME: $(find "$W/home" -type f | wc -l)"; find "$W/home" -type f
