# Shared by the launcher scripts: locate a JDK >= 21 and the project root.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

java_major() {
  # Prints the major version of the java binary $1 (e.g. 17, 21, 25), or nothing.
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)\(\.[0-9]*\)*.*".*/\1/p' | head -n 1
}

find_java() {
  # Sets JAVA_HOME and JAVA to a JDK >= 21: JAVA_HOME if it qualifies, else java on PATH, else the newest
  # JDK under /usr/lib/jvm; otherwise fails with a clear message.
  local c major best="" best_major=0
  for c in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java 2>/dev/null | xargs -r readlink -f)"; do
    if [ -n "$c" ] && [ -x "$c" ] && [ -x "$(dirname "$c")/javac" ]; then
      major="$(java_major "$c")"
      if [ -n "$major" ] && [ "$major" -ge 21 ]; then best="$c"; break; fi
    fi
  done
  if [ -z "$best" ]; then
    for c in /usr/lib/jvm/*/bin/java /Library/Java/JavaVirtualMachines/*/Contents/Home/bin/java; do
      [ -x "$c" ] && [ -x "$(dirname "$c")/javac" ] || continue
      major="$(java_major "$c")"
      if [ -n "$major" ] && [ "$major" -ge 21 ] && [ "$major" -gt "$best_major" ]; then best="$c"; best_major="$major"; fi
    done
  fi
  if [ -z "$best" ]; then
    echo "error: a JDK 21 or newer is required (looked at JAVA_HOME, java on PATH and /usr/lib/jvm/*)." >&2
    echo "       Install one (e.g. 'apt-get install openjdk-21-jdk') or set JAVA_HOME." >&2
    exit 1
  fi
  JAVA="$best"
  JAVA_HOME="$(cd "$(dirname "$best")/.." && pwd)"
  export JAVA_HOME
}

jar_is_stale() {
  # True when the runnable jar is missing or older than any source, resource or build file; with "tests" as
  # the second argument test sources count too (the benchmarks' jar holds the providers' simulators).
  local jar="$1" sources="src/main"
  [ "${2:-}" = tests ] && sources="src"
  [ -f "$jar" ] || return 0
  [ -n "$(find "$ROOT/pom.xml" "$ROOT/conf" "$ROOT"/*/pom.xml "$ROOT"/*/"$sources" -newer "$jar" -type f 2>/dev/null \
    | head -n 1)" ]
}

install_egress_tools() {
  # As root on Debian/Ubuntu, installs nftables when missing: a root gateway enforces sandbox egress with it
  # and does not enable the local, bwrap and docker backends without it. Never fails the start.
  [ "$(id -u)" = 0 ] || return 0
  command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || [ -x /sbin/nft ] && return 0
  command -v apt-get >/dev/null 2>&1 || return 0
  echo "Installing nftables (the sandbox egress rules need it)..." >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables >/dev/null; } \
    || echo "warning: nftables could not be installed: the local, bwrap and docker backends stay off" >&2
}
