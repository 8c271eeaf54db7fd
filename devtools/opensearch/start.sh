#!/usr/bin/env bash
# Start one OpenSearch node (with k-NN) on 127.0.0.1:$OPENSEARCH_PORT in the background and
# wait until the cluster is yellow/green.  Fetches first if needed (fetch.sh is idempotent).
# Env: OPENSEARCH_HOME (cache dir), OPENSEARCH_PORT (9200), OPENSEARCH_HEAP (512m),
#      OPENSEARCH_START_TIMEOUT (seconds, 180), OPENSEARCH_JAVA_HOME / JAVA_HOME,
#      OPENSEARCH_EXTRA_JAVA_OPTS, OPENSEARCH_RUN_USER (user to drop to when root; opensearch).
# `start.sh --fresh` (or OPENSEARCH_FRESH=1) wipes the data dir first when it starts a node.
set -euo pipefail
fresh="${OPENSEARCH_FRESH:-0}"
case "${1:-}" in
  --fresh) fresh=1 ;;
  "") ;;
  *) echo "usage: $0 [--fresh]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/env.sh"

"$here/fetch.sh" >/dev/null

health() { curl -fsS --max-time 3 "${OS_URL}/_cluster/health?wait_for_status=yellow&timeout=1s" 2>/dev/null; }

if os_pid_is_opensearch "$(os_pid)"; then
  if health >/dev/null; then echo "$OS_URL"; exit 0; fi
  echo "start.sh: OpenSearch pid $(os_pid) is running but ${OS_URL} is not healthy yet; waiting" >&2
else
  if curl -fsS --max-time 2 "$OS_URL" >/dev/null 2>&1; then
    echo "start.sh: something else already answers on ${OS_URL}; set OPENSEARCH_PORT" >&2; exit 1
  fi
  rm -f "$OS_PIDFILE" "$OS_PIDFILE.launch"
  [[ "$fresh" == 1 ]] && rm -rf "$OS_DATA"
  mkdir -p "$OS_DATA" "$OS_LOGS" "$OS_RUN"
  # JVM tmp dir inside the cache (bin/opensearch would otherwise leave a /tmp/opensearch-* per start)
  rm -rf "$OS_RUN/tmp"; mkdir -p "$OS_RUN/tmp"
  # fresh writable config each start (the node creates config/opensearch.keystore)
  rm -rf "$OS_CONF"; cp -r "$OS_DIST/config" "$OS_CONF"
  JAVA_HOME="$(os_java_home)"; export JAVA_HOME

  # OpenSearch refuses to run as root and has no override.  As root (CI), drop to a
  # dedicated system user that owns data/logs/run; the distribution itself stays root-owned
  # and world-readable.
  drop=()
  if [[ $(id -u) == 0 ]]; then
    if ! id "$OS_RUN_USER" >/dev/null 2>&1; then
      useradd --system --user-group --no-create-home --home-dir /nonexistent \
              --shell /usr/sbin/nologin "$OS_RUN_USER"
    fi
    chown -R "$OS_RUN_USER:" "$OS_DATA" "$OS_LOGS" "$OS_RUN" "$OS_CONF"
    # every parent of the cache dir must be traversable by that user
    d="$OS_CACHE"; while [[ "$d" != / ]]; do
      setpriv --reuid="$OS_RUN_USER" --regid="$OS_RUN_USER" --clear-groups test -x "$d" 2>/dev/null \
        || { echo "start.sh: $OS_RUN_USER cannot enter $d; chmod o+x it or set OPENSEARCH_HOME" >&2; exit 1; }
      d="$(dirname "$d")"
    done
    if command -v setpriv >/dev/null; then
      drop=(setpriv --reuid="$OS_RUN_USER" --regid="$OS_RUN_USER" --init-groups)
    else
      drop=(runuser -u "$OS_RUN_USER" --)
    fi
  fi

  # bin/opensearch cd's into $OS_DIST, whose logs/ and data/ are symlinks (made by
  # fetch.sh) to $OS_LOGS / $OS_DATA, so jvm.options' logs/gc.log and heap dumps land there.
  cd "$OS_CACHE"
  HOME="$OS_RUN" OPENSEARCH_TMPDIR="$OS_RUN/tmp" OPENSEARCH_HOME="$OS_DIST" OPENSEARCH_PATH_CONF="$OS_CONF" \
  OPENSEARCH_JAVA_OPTS="-Xms${OS_HEAP} -Xmx${OS_HEAP} ${OPENSEARCH_EXTRA_JAVA_OPTS:-}" \
  setsid "${drop[@]}" "$OS_DIST/bin/opensearch" \
      -p "$OS_PIDFILE" \
      -Ecluster.name=hindsight-local \
      -Enode.name=node-1 \
      -Ediscovery.type=single-node \
      -Enetwork.host=127.0.0.1 \
      -Ehttp.port="$OS_PORT" \
      -Epath.data="$OS_DATA" \
      -Epath.logs="$OS_LOGS" \
      -Ecluster.routing.allocation.disk.threshold_enabled=false \
      -Eaction.auto_create_index=true \
      </dev/null >"$OS_LOGS/console.log" 2>&1 &
  launcher=$!
  # the exec chain (setsid -> setpriv -> bin/opensearch -> java) keeps the pid; -p rewrites
  # the same pid once the node has bootstrapped.
  echo "$launcher" >"$OS_PIDFILE.launch"
fi

timeout="${OPENSEARCH_START_TIMEOUT:-180}"
t0=$SECONDS
until health >/dev/null; do
  if ! os_pid_alive "$(os_pid)"; then
    echo "start.sh: OpenSearch exited during startup; last log lines:" >&2
    tail -n 60 "$OS_LOGS/console.log" >&2 || true
    if grep -q 'UnsatisfiedLinkError: no opensearchknn' "$OS_LOGS/console.log"; then
      echo "start.sh: an index in $OS_DATA uses a native k-NN engine (faiss/nmslib, whose libraries" \
           "this build lacks) and kills the node on recovery; start with --fresh to wipe the data" >&2
    fi
    rm -f "$OS_PIDFILE" "$OS_PIDFILE.launch"; exit 1
  fi
  if (( SECONDS - t0 >= timeout )); then
    echo "start.sh: ${OS_URL} not yellow/green after ${timeout}s; last log lines:" >&2
    tail -n 60 "$OS_LOGS/console.log" >&2 || true
    exit 1
  fi
  sleep 1
done
[[ -f "$OS_PIDFILE" ]] || cp "$OS_PIDFILE.launch" "$OS_PIDFILE"
echo "start.sh: OpenSearch ${OS_VERSION} (k-NN ${KNN_VERSION}) pid $(cat "$OS_PIDFILE") healthy after $((SECONDS - t0))s" >&2
echo "$OS_URL"
