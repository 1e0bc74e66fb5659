#!/usr/bin/env bash
# Fails when a board binary has reached the size limit: every static binary of scripts/dist.sh
# must stay under 5,000,000 B, as copied to a board's flash (stripped).
# scripts/dist.sh runs it on what it built, so CI (.ci/run) fails with the binary's name and
# size before a binary that would not fit is ever shipped.
#
#   scripts/size-check.sh FILE...
set -euo pipefail

LIMIT=5000000

# 5027656 -> 5,027,656
commas() { sed ':a; s/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/; ta' <<<"$1"; }

(($#)) || { echo "size-check: no binary given: run as scripts/size-check.sh FILE..." >&2; exit 2; }
status=0
for f in "$@"; do
    if [[ ! -f $f ]]; then
        echo "size-check: $f is not a file: give the path of a binary built by scripts/dist.sh" >&2
        status=1
        continue
    fi
    size=$(stat -c %s -- "$f")
    if ((size >= LIMIT)); then
        echo "size-check: $f is $(commas "$size") B, at or over the $(commas $LIMIT) B limit for a board binary: make it smaller (docs/boards.md, \"Binary size\")" >&2
        status=1
    fi
done
exit $status
