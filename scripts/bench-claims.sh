#!/usr/bin/env bash
# Trials claimed per second and claim latency with 8 workers (trials of zero length), on SQLite
# and on PostgreSQL (a throwaway local server from scripts/postgres-test-server.sh). The claim
# reads the study's history in the same transaction, so its cost grows with the trials so far:
# TRIALS (default 2000) says how long a study is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-2000}
cargo bench --locked -p agents --bench claims --no-run -q 2>/dev/null
bin=$(ls -t target/release/deps/claims-* | grep -v '\.d$' | head -1)
work=$(mktemp -d)
chmod 755 "$work"  # the server runs as nobody when we are root
server="$work/postgres"
mkdir "$server"
trap 'bash scripts/postgres-test-server.sh stop "$server"; rm -rf "$work"' EXIT
"$bin" "sqlite:$work/claims.db" "$trials"
url=$(bash scripts/postgres-test-server.sh start "$server")
"$bin" "$url" "$trials"
