#!/usr/bin/env bash
# The quick start: installs svc, starts an agent on the embedded SQLite datastore in the background with
# the LOCAL plugin, applies examples/quickstart.pkl (a directory and three files under ~/svc-quickstart)
# and prints the inventory. Stop the agent with: .venv/bin/svc agent stop
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install.sh"
svc="${SVC_VENV:-$root/.venv}/bin/svc"
config="$root/examples/quickstart/svc.conf.pkl"
forma="$root/examples/quickstart.pkl"
data="${XDG_DATA_HOME:-$HOME/.local/share}/svc"
mkdir -p "$data"

if "$svc" agent status --config "$config" >/dev/null 2>&1; then
  echo "==> an agent is already running; restarting it with $config"
  "$svc" agent stop
fi
echo "==> starting the agent (log: $data/quickstart-agent.out)"
nohup "$svc" agent start --config "$config" >"$data/quickstart-agent.out" 2>&1 &
agent=$!
for _ in $(seq 1 150); do
  if "$svc" status agent --config "$config" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$agent" 2>/dev/null; then cat "$data/quickstart-agent.out" >&2; exit 1; fi
  sleep 0.2
done
"$svc" status agent --config "$config"

echo "==> applying $forma"
"$svc" apply --mode reconcile "$forma" --config "$config" --yes --wait
echo "==> the inventory"
"$svc" inventory --config "$config"
echo "==> the files are under ~/svc-quickstart; the agent runs in the background: stop it with: $svc agent stop"
