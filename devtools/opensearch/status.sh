#!/usr/bin/env bash
# Exit 0 and print URL + health when the node is up; exit 1 otherwise.
# `status.sh --wait [seconds]` polls until yellow/green (default 60s).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
wait_s=0
[[ "${1:-}" == --wait ]] && wait_s="${2:-60}"
t0=$SECONDS
while :; do
  if out="$(curl -fsS --max-time 3 "${OS_URL}/_cluster/health?wait_for_status=yellow&timeout=1s" 2>/dev/null)"; then
    echo "$OS_URL pid=$(cat "$OS_PIDFILE" 2>/dev/null || echo '?') $out"; exit 0
  fi
  (( SECONDS - t0 >= wait_s )) && { echo "$OS_URL not healthy" >&2; exit 1; }
  sleep 1
done
