#!/usr/bin/env bash
# Stop the node started by start.sh (SIGTERM via the pid file, SIGKILL after a timeout).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
pid="$(os_pid)"
# os_pid_is_opensearch also guards against a stale pid file whose pid was recycled
if ! os_pid_is_opensearch "$pid"; then
  echo "stop.sh: not running"; rm -f "$OS_PIDFILE" "$OS_PIDFILE.launch"; exit 0
fi
kill -TERM "$pid"
for _ in $(seq 1 "$(( ${OPENSEARCH_STOP_TIMEOUT:-30} * 5 ))"); do
  os_pid_alive "$pid" || break
  sleep 0.2
done
if os_pid_alive "$pid"; then echo "stop.sh: SIGKILL $pid"; kill -KILL "$pid"; fi
rm -f "$OS_PIDFILE" "$OS_PIDFILE.launch"
echo "stop.sh: stopped (pid $pid)"
