#!/usr/bin/env bash
# The quick start: installs svc, starts an agent on the embedded SQLite datastore in the
# background, and checks it with the CLI. Stop the agent with: .venv/bin/svc agent stop
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install.sh"
svc="${SVC_VENV:-$root/.venv}/bin/svc"
config="$root/examples/quickstart/svc.conf.pkl"
data="${XDG_DATA_HOME:-$HOME/.local/share}/svc"
mkdir -p "$data"

if "$svc" agent status --config "$config" >/dev/null 2>&1; then
  echo "==> an agent is already running; restarting it with $config"
  "$svc" agent stop
fi
echo "==> starting the agent (log: $data/quickstart-agent.out)"
nohup "$svc" agent start --config "$config" >"$data/quickstart-agent.out" 2>&1 &
for _ in $(seq 1 100); do
  if "$svc" status agent --config "$config" >/dev/null 2>&1; then break; fi
  if ! kill -0 $! 2>/dev/null; then cat "$data/quickstart-agent.out" >&2; exit 1; fi
  sleep 0.2
done
"$svc" status agent --config "$config"
echo "==> the agent runs in the background; stop it with: $svc agent stop"
