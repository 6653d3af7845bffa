#!/usr/bin/env bash
# mypy (strict) on the package as it is imported. gputop_trace/ holds the package's own code; parsers/, analysis/
# and tui/ are mapped in as gputop_trace.parsers/.analysis/.tui at install time (setuptools package-dir), which
# mypy cannot follow through an editable install: build that layout from symlinks and check it there, then the
# tests against it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/gputop_trace"
for f in "$root"/gputop_trace/*; do ln -s "$f" "$tree/gputop_trace/$(basename "$f")"; done
for d in parsers analysis tui; do ln -s "$root/$d" "$tree/gputop_trace/$d"; done
ln -s "$root/tests" "$tree/tests"
cd "$tree"
python3 -m mypy --config-file "$root/pyproject.toml" -p gputop_trace "$@"
python3 -m mypy --config-file "$root/pyproject.toml" -p tests "$@"
