#!/usr/bin/env bash
# Installs svc with its dev tools and runs the whole test suite. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install.sh" --dev
cd "$root"
exec "${SVC_VENV:-$root/.venv}/bin/python" -m pytest "$@"
