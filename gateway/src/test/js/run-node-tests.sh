#!/usr/bin/env bash
# Runs the dashboard's JavaScript tests with Node's built-in test runner (no packages), when node is there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: the dashboard's JavaScript tests (src/test/js) need node on PATH; none found" >&2
  exit 0
fi
exec node --test ./*.test.mjs
