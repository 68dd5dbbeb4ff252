#!/usr/bin/env bash
# Installs svc with its dev tools and runs the whole test suite. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install.sh" --dev
cd "$root"
# PostgreSQL for the datastore tests: the one on 127.0.0.1:5432, else a throwaway cluster.
SVC_TEST_POSTGRES_URL="${SVC_TEST_POSTGRES_URL:-$("$root/scripts/ensure-postgres.sh")}"
export SVC_TEST_POSTGRES_URL
# Test files run on parallel workers (each file's tests on one worker, so module fixtures are built once).
workers="${SVC_TEST_WORKERS:-2}"
parallel=()
if [ "$workers" != "0" ]; then
  parallel=(--numprocesses "$workers" --dist loadfile)
fi
exec "${SVC_VENV:-$root/.venv}/bin/python" -m pytest "${parallel[@]}" "$@"
