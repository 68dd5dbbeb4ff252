#!/usr/bin/env bash
# Makes sure a PostgreSQL server is available for the tests and prints its URL on stdout (one line).
#
# Uses the server at 127.0.0.1:5432 when one answers (as here and in CI). Otherwise starts a throwaway
# cluster: initdb into a temp dir with trust auth, listening on 127.0.0.1 on a free port, stopped by
# `scripts/ensure-postgres.sh --stop <data dir>` (the data dir is printed on stderr). Progress goes to stderr.
#
#   export SVC_TEST_POSTGRES_URL="$(scripts/ensure-postgres.sh)"
set -euo pipefail

PG_BIN="${SVC_PG_BIN:-/usr/lib/postgresql/15/bin}"
[ -x "$PG_BIN/pg_ctl" ] || PG_BIN="$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/pg_ctl)")"

say() { echo "ensure-postgres: $*" >&2; }

as_owner() {
  # initdb and postgres refuse to run as root: run them as the cluster directory's owner.
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$PG_USER" -- "$@"
  else
    "$@"
  fi
}

if [ "${1:-}" = "--stop" ]; then
  data="${2:?usage: ensure-postgres.sh --stop <data dir>}"
  PG_USER="$(stat -c %U "$data")"
  as_owner "$PG_BIN/pg_ctl" -D "$data" -m fast stop >&2 || true
  rm -rf "$(dirname "$data")"
  exit 0
fi

if command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432 -t 3; then
  echo "postgresql://postgres@127.0.0.1:5432/postgres"
  exit 0
fi

[ -x "$PG_BIN/initdb" ] || { say "no PostgreSQL binaries in $PG_BIN (apt-get install postgresql-15, or set SVC_PG_BIN)"; exit 1; }

if [ "$(id -u)" = 0 ]; then
  PG_USER="$(id -un postgres 2>/dev/null || echo nobody)"
else
  PG_USER="$(id -un)"
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/svc-postgres.XXXXXX")"
data="$root/data"
chmod 755 "$root"
[ "$(id -u)" = 0 ] && chown "$PG_USER" "$root"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

say "no server on 127.0.0.1:5432; starting a throwaway one on port $port (data dir $data)"
as_owner "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-sync >"$root/initdb.log" 2>&1 \
  || { cat "$root/initdb.log" >&2; exit 1; }
as_owner "$PG_BIN/pg_ctl" -D "$data" -l "$root/server.log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $root -c fsync=off -c max_connections=200" start >&2 \
  || { cat "$root/server.log" >&2; exit 1; }
say "stop it with: $0 --stop $data"
echo "postgresql://postgres@127.0.0.1:$port/postgres"
