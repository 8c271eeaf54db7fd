#!/usr/bin/env bash
# Fetch OpenSearch (integ-test-zip) + lang-painless + k-NN from Maven Central with mvn and
# assemble a runnable distribution under $OPENSEARCH_HOME (default <repo>/.opensearch).
# Idempotent: exits at once when the pinned versions are already installed.
# Env: OPENSEARCH_HOME (cache dir), OPENSEARCH_FETCH_FORCE=1 (reinstall),
#      OPENSEARCH_MVN_ARGS (extra mvn args, e.g. -Dmaven.repo.local=/tmp/m2).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

if [[ -f "$OS_STAMP" && "${OPENSEARCH_FETCH_FORCE:-0}" != 1 ]]; then
  echo "opensearch ${OS_VERSION} + k-NN ${KNN_VERSION} already in ${OS_DIST}"
  exit 0
fi

for tool in mvn unzip; do
  command -v "$tool" >/dev/null || { echo "fetch.sh: '$tool' not found" >&2; exit 1; }
done
JAVA_HOME="$(os_java_home)"; export JAVA_HOME

t0=$SECONDS
mkdir -p "$OS_DOWNLOADS"

# --- 1. download (one mvn run; dependency:copy with explicit artifactItems) ---------------
need=0
for a in "${OS_ARTIFACTS[@]}"; do
  IFS=: read -r g art v typ <<<"$a"
  [[ -s "${OS_DOWNLOADS}/${art}-${v}.${typ}" ]] || need=1
done
if [[ $need == 1 ]]; then
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
  {
    echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
    echo '<groupId>local.hindsight</groupId><artifactId>opensearch-fetch</artifactId><version>0</version><packaging>pom</packaging>'
    IFS=: read -r pg pa pv <<<"$MVN_DEP_PLUGIN"
    echo "<build><plugins><plugin><groupId>$pg</groupId><artifactId>$pa</artifactId><version>$pv</version>"
    echo "<configuration><outputDirectory>${OS_DOWNLOADS}</outputDirectory><overWriteIfNewer>false</overWriteIfNewer><artifactItems>"
    for a in "${OS_ARTIFACTS[@]}"; do
      IFS=: read -r g art v typ <<<"$a"
      echo "<artifactItem><groupId>$g</groupId><artifactId>$art</artifactId><version>$v</version><type>$typ</type></artifactItem>"
    done
    echo '</artifactItems></configuration></plugin></plugins></build></project>'
  } >"$work/pom.xml"
  echo "fetch.sh: downloading ${#OS_ARTIFACTS[@]} artifacts from Maven Central with mvn ..."
  # shellcheck disable=SC2086
  (cd "$work" && mvn -B -q -ntp -C -Dstyle.color=never ${OPENSEARCH_MVN_ARGS:-} "${MVN_DEP_PLUGIN}:copy")
fi
t1=$SECONDS

# --- 2. unpack into a staging dir, assemble, then move into place --------------------------
stage="${OS_CACHE}/.staging"
rm -rf "$stage"; mkdir -p "$stage"
unzip -q "${OS_DOWNLOADS}/opensearch-${OS_VERSION}.zip" -d "$stage"
home="${stage}/opensearch-${OS_VERSION}"

# lang-painless module (k-NN declares extended.plugins=lang-painless; integ-test-zip has
# only transport-netty4). Same file set and descriptor as the full distribution's module.
mod="${home}/modules/lang-painless"
mkdir -p "$mod"
for a in "${OS_ARTIFACTS[@]}"; do
  IFS=: read -r g art v typ <<<"$a"
  [[ $typ == jar ]] && cp "${OS_DOWNLOADS}/${art}-${v}.jar" "$mod/"
done
cat >"$mod/plugin-descriptor.properties" <<PROPS
description=An easy, safe and fast scripting language for OpenSearch
version=${OS_VERSION}
name=lang-painless
classname=org.opensearch.painless.PainlessPlugin
java.version=11
opensearch.version=${OS_VERSION}
custom.foldername=
extended.plugins=
has.native.controller=false
PROPS
cat >"$mod/plugin-security.policy" <<'POLICY'
grant {
  // needed to generate runtime classes
  permission java.lang.RuntimePermission "createClassLoader";
  // needed to find the classloader to load whitelisted classes from
  permission java.lang.RuntimePermission "getClassLoader";
};
POLICY

# k-NN through the official installer (--batch accepts the plugin's security policy).
OPENSEARCH_HOME="$home" OPENSEARCH_PATH_CONF="$home/config" \
  "$home/bin/opensearch-plugin" install --batch "file://${OS_DOWNLOADS}/opensearch-knn-${KNN_VERSION}.zip" \
  2>&1 | grep -v -e 'no-jdk distributions' -e '^-> ' -e '^\s*$' || true
[[ -f "$home/plugins/opensearch-knn/opensearch-knn-${KNN_VERSION}.jar" ]] || {
  echo "fetch.sh: k-NN plugin install failed" >&2; exit 1; }

# the zip stores config/ as 0660/0750 (root:root here); start.sh may run the node as a
# non-root user, so make the whole read-only distribution world-readable.
chmod -R a+rX "$home"
# bin/opensearch cd's into the distribution, and jvm.options writes logs/gc.log and heap
# dumps into ./data relative to it: point both at the cache dir's writable data/ and logs/.
rm -rf "$home/logs" "$home/data"
ln -s ../logs "$home/logs"
ln -s ../data "$home/data"

rm -rf "$OS_DIST"
mv "$home" "$OS_DIST"
rm -rf "$stage"
echo "fetched=$(date -u +%FT%TZ) opensearch=${OS_VERSION} knn=${KNN_VERSION}" >"$OS_STAMP"
echo "fetch.sh: OpenSearch ${OS_VERSION} + lang-painless + k-NN ${KNN_VERSION} in ${OS_DIST}" \
     "(download $((t1 - t0))s, install $((SECONDS - t1))s; $(du -sh "$OS_DIST" | cut -f1) unpacked)"
