#!/usr/bin/env bash
# Everything a change must pass before it is committed: lint, format, types, tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python3 -m ruff check .
python3 -m ruff format --check .
scripts/typecheck.sh
python3 -m pytest "$@"
