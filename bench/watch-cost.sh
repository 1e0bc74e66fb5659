#!/usr/bin/env bash
# What `headroom watch` costs: CPU time (user + system, from the kernel's accounting of the
# process) per sample, on the largest fixture trees and on this machine. A run of one sample
# measures the start (the audit that names the paths, the first sample); a run of many, the
# same start plus the samples: the difference over the extra samples is the CPU per sample.
# A sample does the same reads whatever the interval; INTERVAL (default 100ms) only sets how
# many samples SECONDS_PER_RUN (default 30) holds, so that the start's own noise (the median of
# 5 one-sample runs) is spread over hundreds of samples. Not a test: read the figure as an
# order of magnitude against the interval (1 ms per 1 s sample is 0.1 % of one CPU).
set -euo pipefail
source "$(dirname "$0")/common.sh"
need_headroom
SECONDS_PER_RUN=${SECONDS_PER_RUN:-30}

cpu_ms() { # args... -> "CPU ms, samples" of one `headroom watch` run
    # The child's user + system time from getrusage(RUSAGE_CHILDREN), in microseconds (GNU
    # time prints hundredths of a second, too coarse for one sample).
    python3 - "$headroom" "$@" <<'PY'
import json, resource, subprocess, sys
out = subprocess.run([sys.argv[1], "watch", "--no-save", "--json", *sys.argv[2:]],
                     capture_output=True, text=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{(r.ru_utime + r.ru_stime) * 1000:.2f} {json.loads(out.stdout)['samples']}")
PY
}

printf '%-44s %8s %14s %12s\n' "tree" "samples" "start CPU ms" "CPU ms/sample"
for t in "$here/tests/fixtures/sysfs/qemu-q35-lab" \
    "$here/tests/fixtures/captured/sysfs/hwloc-40intel64-4xeth-ib-2pciroots" \
    "/"; do
    args=(--root "$t")
    one=$(for _ in 1 2 3 4 5; do cpu_ms "${args[@]}" --for 1ms | cut -d' ' -f1; done | sort -n | sed -n 3p)
    read -r many n < <(cpu_ms "${args[@]}" --interval "${INTERVAL:-100ms}" --for "${SECONDS_PER_RUN}s")
    per=$(awk -v a="$one" -v b="$many" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / (n - 1) }')
    name=$([ "$t" = / ] && echo "this machine (/)" || basename "$t")
    printf '%-44s %8s %14s %12s\n' "$name" "$n" "$one" "$per"
done
