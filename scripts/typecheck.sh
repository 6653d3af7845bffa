#!/usr/bin/env bash
# mypy (strict) on the package as it is imported: gputop_trace.* is mapped from core/, parsers/, analysis/, tui/
# at install time (setuptools package-dir), so build that layout from symlinks and check it there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/gputop_trace"
for f in "$root"/core/*; do ln -s "$f" "$tree/gputop_trace/$(basename "$f")"; done
for d in parsers analysis tui sample_traces; do ln -s "$root/$d" "$tree/gputop_trace/$d"; done
cd "$tree"
python3 -m mypy --config-file "$root/pyproject.toml" -p gputop_trace "$@"
