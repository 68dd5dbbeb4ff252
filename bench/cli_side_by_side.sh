#!/usr/bin/env bash
# The same operations with svc (LOCAL files) and Terraform (terraform_data, offline), outputs one after the
# other: the side-by-side table of issue 28. Needs terraform on PATH. Usage: bench/cli_side_by_side.sh
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
svc="${SVC_VENV:-$root/.venv}/bin/svc"
command -v terraform >/dev/null || { echo "terraform is not on PATH" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/svc-side-by-side.XXXX")
# A home of its own (the agent's data, LOCAL's root), and Terraform without its update check or user config.
export HOME=$work/home XDG_DATA_HOME=$work/data CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null
mkdir -p "$HOME"
port="${SVC_SIDE_BY_SIDE_PORT:-49711}"
trap '"$svc" agent stop --config "$work/svc.conf.pkl" >/dev/null 2>&1; rm -rf "$work"' EXIT
cat > $work/svc.conf.pkl <<PKL
amends "svc:/Config.pkl"
import "plugins:/LOCAL.pkl"
agent {
  server { port = $port }
  datastore { datastoreType = "sqlite"; sqlite { filePath = "$work/svc.db" } }
  resourcePlugins { new LOCAL.PluginConfig {} }
  retry { retryDelay = 1.s; statusCheckInterval = 1.s }
}
cli { api { url = "http://localhost"; port = $port } }
PKL
form() { cat > $work/site.pkl <<PKL
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"
local site = new fs.Directory { label = "site"; path = "site"; mode = "0755" }
forma {
  new svc.Stack { label = "web" }
  new svc.Target { label = "sbs"; config = new lcl.Config { root = "~/sbs" } }
  site
  new fs.File { label = "index"; path = "\(site.res.path)/index.html"; content = "$1\n" }
}
PKL
}
tf() { cat > $work/tf/main.tf <<TF
resource "terraform_data" "site" { input = "site" }
resource "terraform_data" "index" { input = "\${terraform_data.site.output}/index.html: $1" }
TF
}
mkdir -p $work/tf
export SVC_CONFIG=$work/svc.conf.pkl
if "$svc" status agent --config "$work/svc.conf.pkl" >/dev/null 2>&1; then
  echo "something already answers on port $port: set SVC_SIDE_BY_SIDE_PORT to a free one" >&2; exit 1
fi
$svc agent start --config $work/svc.conf.pkl > $work/agent.out 2>&1 &
for i in $(seq 60); do $svc status agent --config $work/svc.conf.pkl >/dev/null 2>&1 && break; sleep 0.5; done
C="--config $work/svc.conf.pkl"
step() { echo; echo "### $1"; }
run() { echo "\$ $*" | sed "s#$work/##g; s#$root/.venv/bin/##g; s# --config svc.conf.pkl##g"; (cd $work; "$@" 2>&1 | sed "s#$work/##g"; echo "[exit ${PIPESTATUS[0]}]"); }
form hello; tf hello
(cd $work/tf && terraform init -no-color >/dev/null 2>&1)
step "plan (nothing exists yet)"
run $svc plan site.pkl $C
(cd $work/tf; run terraform -chdir=tf plan -no-color)
step "apply"
run $svc apply site.pkl --yes --wait $C
(cd $work; run terraform -chdir=tf apply -auto-approve -no-color)
step "list what is managed"
run $svc inventory resources $C
run terraform -chdir=tf state list
step "plan with nothing to do, detailed exit code"
run $svc plan site.pkl --detailed-exitcode $C
run terraform -chdir=tf plan -detailed-exitcode -no-color
step "change a value: plan saved to a file, then applied"
form "hello, world"; tf "hello, world"
run $svc plan site.pkl -o plan.out $C
run $svc apply plan.out $C
run terraform -chdir=tf plan -out=plan.out -no-color
run terraform -chdir=tf apply -no-color plan.out
step "a change made by hand (drift)"
echo "edited by hand" > $HOME/sbs/site/index.html
run $svc sync $C
run $svc drift $C
run terraform -chdir=tf plan -refresh-only -no-color
step "destroy"
run $svc destroy site.pkl --yes --wait $C
run terraform -chdir=tf destroy -auto-approve -no-color
