# shellcheck shell=bash
# Sourced by fetch.sh / start.sh / stop.sh / status.sh.  Every pinned version lives here.
#
# Why these versions: Maven Central serves opensearch-knn only as 2.19.1.0 and 3.5.0.0,
# and the integ-test-zip distribution is not published for 3.5.0 (only 2.19.1 / 2.19.6 /
# 3.6.0 in the 2.19+ range), and k-NN must match the core version exactly.  2.19.1 also
# runs on the machine's default Java 17.
OS_VERSION=2.19.1            # org.opensearch.distribution.integ-test-zip:opensearch
KNN_VERSION=2.19.1.0         # org.opensearch.plugin:opensearch-knn (must be ${OS_VERSION}.0)
# lang-painless is not published as a zip for 2.19.x, only as jar + pom; we assemble the
# module from its jar and the exact dependencies listed in lang-painless-${OS_VERSION}.pom.
ANTLR4_VERSION=4.13.1        # org.antlr:antlr4-runtime
ASM_VERSION=9.7              # org.ow2.asm:asm{,-util,-tree,-commons,-analysis}
MVN_DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

OS_ARTIFACTS=(
  "org.opensearch.distribution.integ-test-zip:opensearch:${OS_VERSION}:zip"
  "org.opensearch.plugin:opensearch-knn:${KNN_VERSION}:zip"
  "org.opensearch.plugin:lang-painless:${OS_VERSION}:jar"
  "org.opensearch.plugin:opensearch-scripting-painless-spi:${OS_VERSION}:jar"
  "org.antlr:antlr4-runtime:${ANTLR4_VERSION}:jar"
  "org.ow2.asm:asm:${ASM_VERSION}:jar"
  "org.ow2.asm:asm-util:${ASM_VERSION}:jar"
  "org.ow2.asm:asm-tree:${ASM_VERSION}:jar"
  "org.ow2.asm:asm-commons:${ASM_VERSION}:jar"
  "org.ow2.asm:asm-analysis:${ASM_VERSION}:jar"
)

_os_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OS_REPO_ROOT="$(cd "${_os_here}/../.." && pwd)"
# Cache dir (downloads, unpacked distribution, config, data, logs, pid file).
# NB: bin/opensearch itself treats OPENSEARCH_HOME as *its* install dir, so the scripts
# re-export OPENSEARCH_HOME=$OS_DIST whenever they call an OpenSearch binary.
OS_CACHE="${OPENSEARCH_HOME:-${OS_REPO_ROOT}/.opensearch}"
OS_DIST="${OS_CACHE}/opensearch-${OS_VERSION}"
OS_DOWNLOADS="${OS_CACHE}/downloads"
OS_STAMP="${OS_DIST}/.fetched-knn-${KNN_VERSION}"
OS_DATA="${OS_CACHE}/data"
OS_LOGS="${OS_CACHE}/logs"
OS_RUN="${OS_CACHE}/run"
OS_CONF="${OS_CACHE}/config"   # per-run copy of the distribution's config/ (node writes its keystore there)
OS_PIDFILE="${OS_RUN}/opensearch.pid"

OS_PORT="${OPENSEARCH_PORT:-9200}"
OS_HEAP="${OPENSEARCH_HEAP:-512m}"
OS_URL="http://127.0.0.1:${OS_PORT}"
OS_RUN_USER="${OPENSEARCH_RUN_USER:-opensearch}"   # used only when started as root

# Java: OpenSearch 2.19 runs on 11..23; prefer OPENSEARCH_JAVA_HOME, then JAVA_HOME,
# then the JDK that `java` on PATH belongs to.
os_java_home() {
  if [[ -n "${OPENSEARCH_JAVA_HOME:-}" ]]; then echo "$OPENSEARCH_JAVA_HOME"; return; fi
  if [[ -n "${JAVA_HOME:-}" ]]; then echo "$JAVA_HOME"; return; fi
  local j; j="$(command -v java)" || { echo "java not found" >&2; return 1; }
  j="$(readlink -f "$j")"; dirname "$(dirname "$j")"
}

# pid exists and is not a zombie (a container's pid 1 may be slow to reap orphans)
os_pid_alive() {
  local st
  [[ -n "${1:-}" && -r "/proc/$1/stat" ]] || return 1
  st="$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)"
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}
# pid is a live OpenSearch JVM, or its launcher (setsid/setpriv/bin/opensearch, which exec
# into the JVM); guards against stale pid files and recycled pids
os_pid_is_opensearch() {
  os_pid_alive "${1:-}" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null \
    | grep -q -e 'org.opensearch.bootstrap.OpenSearch' -e "${OS_DIST}/bin/opensearch"
}
os_pid() { cat "$OS_PIDFILE" 2>/dev/null || cat "$OS_PIDFILE.launch" 2>/dev/null || true; }
