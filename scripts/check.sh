#!/usr/bin/env bash
# Everything a change must pass before it is committed, as CI runs it: the static gates (ruff lint and format,
# mypy --strict on the package and the tests, the import-linter layer contracts), then the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/gates.sh
python3 -m pytest "$@"
