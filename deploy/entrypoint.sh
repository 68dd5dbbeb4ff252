#!/bin/sh
# Container entrypoint of the svc agent image.
#
# The whole agent config arrives in $SVC_CONFIG (injected from the secrets store), because managed
# container platforms cannot mount files; `svc agent start` needs a file, so it is written here,
# readable by this (unprivileged) user only, and the agent replaces this shell (exec) so that the
# platform's SIGTERM reaches it directly.
#
# SVC_CONFIG_FILE overrides where the file goes (default: ~/.config/svc/agent.pkl).
set -eu

if [ -z "${SVC_CONFIG:-}" ]; then
  echo "svc-entrypoint: SVC_CONFIG is unset or empty; store the agent config in the secrets store and inject it as SVC_CONFIG" >&2
  exit 1
fi

config_file="${SVC_CONFIG_FILE:-${HOME:-/tmp}/.config/svc/agent.pkl}"

# umask first: the file must never exist, even for an instant, with a wider mode.
umask 077
mkdir -p "$(dirname "$config_file")"
# A file left by an earlier start keeps its old mode when overwritten, so remove it first.
rm -f "$config_file"
# printf '%s' writes the variable byte for byte (echo would interpret backslashes and add a newline).
printf '%s' "$SVC_CONFIG" > "$config_file"
chmod 0600 "$config_file"

exec svc agent start --config "$config_file"
