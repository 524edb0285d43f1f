#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (agents/tests/sweep_storages.rs starts and stops
# it; nothing else is touched):
#   scripts/postgres-test-server.sh start DIR   -> prints postgresql://mtf@127.0.0.1:PORT/mtf
#   scripts/postgres-test-server.sh restart DIR
#   scripts/postgres-test-server.sh stop DIR
# DIR must be a new, empty directory the caller made. The server listens on loopback only (its
# Unix socket lives in DIR), trusts local connections, and runs without fsync (test data).
# Debian's `postgresql` package is installed if no server is found (apt-get, as root). As root,
# initdb and the server run as the unprivileged user `nobody`.
set -euo pipefail
cmd=${1:?start or stop}
dir=${2:?a directory}

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin /usr/local/bin /usr/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

bin=$(find_bin || true)
if [ -z "$bin" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "no PostgreSQL server found (initdb, pg_ctl, postgres) and not root to install Debian's postgresql" >&2
    exit 1
  fi
  echo "installing Debian's postgresql package for the tests" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
  bin=$(find_bin)
fi

as_server=()
if [ "$(id -u)" = 0 ]; then
  as_server=(runuser -u nobody --)
fi

case $cmd in
start)
  chmod 0777 "$dir"
  [ "$(id -u)" = 0 ] && chown nobody "$dir"
  "${as_server[@]}" "$bin/initdb" -D "$dir/data" -U mtf --auth=trust -E UTF8 --no-instructions > "$dir/initdb.log"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${as_server[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start > /dev/null
  "$bin/psql" -q -h 127.0.0.1 -p "$port" -U mtf -d postgres -c "CREATE DATABASE mtf" > /dev/null 2>&1 \
    || "${as_server[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U mtf mtf
  echo "postgresql://mtf@127.0.0.1:$port/mtf"
  ;;
restart)
  # The same server and options, after an immediate shutdown (what a crash looks like to a
  # client).
  "${as_server[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m immediate -w -t 60 restart > /dev/null
  ;;
stop)
  if [ -f "$dir/data/postmaster.pid" ]; then
    "${as_server[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop > /dev/null || true
  fi
  ;;
*)
  echo "usage: $0 start|restart|stop DIR" >&2
  exit 2
  ;;
esac
