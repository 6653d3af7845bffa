#!/usr/bin/env bash
# The static gates .ci/run runs before the tests: ruff (lint and format), mypy --strict on the package and on the
# tests, and the import-linter layer contracts in pyproject.toml.
#
# gputop_trace/ holds the package's own code; parsers/, analysis/ and tui/ are mapped in as gputop_trace.parsers,
# .analysis and .tui at install time (setuptools package-dir). mypy and import-linter cannot follow that mapping
# through an editable install, so they run on the same layout built from symbolic links.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
echo "== ruff check"; python3 -m ruff check .
echo "== ruff format --check"; python3 -m ruff format --check .
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/gputop_trace"
for f in "$root"/gputop_trace/*; do ln -s "$f" "$tree/gputop_trace/$(basename "$f")"; done
for d in parsers analysis tui; do ln -s "$root/$d" "$tree/gputop_trace/$d"; done
ln -s "$root/tests" "$tree/tests"
cd "$tree"
echo "== mypy --strict (package)"; python3 -m mypy --config-file "$root/pyproject.toml" -p gputop_trace
echo "== mypy --strict (tests)"; python3 -m mypy --config-file "$root/pyproject.toml" -p tests
echo "== lint-imports"; PYTHONPATH="$tree" lint-imports --config "$root/pyproject.toml"
