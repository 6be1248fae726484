#!/usr/bin/env bash
# Runs tools/data/prepare_test.py with the project's Python environment
# (tools/setup.sh makes it; $ZERO3_PYENV, default ~/.cache/zero3/pyenv).
set -euo pipefail
env="${ZERO3_PYENV:-${HOME:-/nonexistent}/.cache/zero3/pyenv}"
if [ ! -x "$env/bin/python" ]; then
  echo "prepare_test: no Python environment at $env; run tools/setup.sh" >&2
  exit 1
fi
export TMPDIR="${TEST_TMPDIR:-${TMPDIR:-/tmp}}"
exec "$env/bin/python" "$(dirname "$(readlink -f "$0")")/prepare_test.py" -v
