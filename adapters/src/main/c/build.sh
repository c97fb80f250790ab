#!/bin/sh
# Builds the sandbox supervisor into the classes directory (a resource of the jar) where a C compiler exists;
# without one the build goes on and the gateway starts executions one by one.
# Usage: build.sh <source> <classes directory>
set -eu
src=$1
classes=$2
if [ "$(uname -s)" != Linux ]; then
  echo "sandbox supervisor: not built (not Linux)"
  exit 0
fi
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "sandbox supervisor: not built (no C compiler '$cc'); executions will start one by one"
  exit 0
fi
out="$classes/native/linux-$(uname -m)"
mkdir -p "$out"
if [ -f "$out/sandbox-supervisor" ] && [ "$out/sandbox-supervisor" -nt "$src" ]; then
  exit 0
fi
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -o "$out/sandbox-supervisor.tmp" "$src"
mv "$out/sandbox-supervisor.tmp" "$out/sandbox-supervisor"
