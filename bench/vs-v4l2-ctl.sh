#!/bin/sh
# headroom bench video against v4l2-ctl --stream-mmap on one capture device, alternating
# headroom, v4l2-ctl, headroom, v4l2-ctl ... so a drifting machine hits both alike. Each round
# captures the same format, size, rate and frame count with mmap buffers; headroom's rate is
# the one over the driver's timestamps of the whole capture, v4l2-ctl's the last it prints
# (its own rate over the driver's timestamps). Prints one JSON object: every round, the median
# of each tool and the ratio of the medians (headroom / v4l2-ctl). Never fails on a rate: it
# reports.
#
# Usage: bench/vs-v4l2-ctl.sh [DEVICE [FOURCC [WxH [FPS [FRAMES]]]]]
#        (defaults /dev/video0 YUYV 640x480 30 150)
# env:   ROUNDS (3), HEADROOM (headroom binary), V4L2_CTL (v4l2-ctl command, may hold
#        arguments, e.g. a dynamic loader before it).
# POSIX sh and busybox's tools only: the board lab runs it inside a board.
set -eu
dev=${1:-/dev/video0}
fmt=${2:-YUYV}
size=${3:-640x480}
fps=${4:-30}
frames=${5:-150}
rounds=${ROUNDS:-3}
headroom=${HEADROOM:-headroom}
v4l2ctl=${V4L2_CTL:-v4l2-ctl}
width=${size%x*}
height=${size#*x}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

case $rounds in '' | *[!0-9]*) echo "vs-v4l2-ctl: ROUNDS=$rounds is not a count" >&2; exit 2 ;; esac
[ "$rounds" -ge 1 ] && [ "$rounds" -le 100 ] || { echo "vs-v4l2-ctl: ROUNDS from 1 to 100" >&2; exit 2; }

# The median of the numbers on stdin ("" when there is none).
median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

i=1
rows=
while [ "$i" -le "$rounds" ]; do
    # headroom: the capture's rate over the driver's timestamps ("fps": N in its document).
    "$headroom" bench video "$dev" --format "$fmt" --size "$size" --fps "$fps" --frames "$frames" \
        --json --no-save >"$work/h.json" 2>"$work/h.err" || true
    h=$(grep -o '"fps": [0-9][0-9.]*' "$work/h.json" | tail -1 | awk '{ print $2 }')
    # v4l2-ctl: "<<<<<<... 30.00 fps" lines on stderr; the last one.
    # shellcheck disable=SC2086 # V4L2_CTL may hold a loader and its arguments
    $v4l2ctl -d "$dev" --set-fmt-video="width=$width,height=$height,pixelformat=$fmt" \
        --set-parm="$fps" --stream-mmap --stream-count="$frames" >"$work/v.out" 2>&1 || true
    v=$(grep -o '[0-9][0-9.]* fps' "$work/v.out" | tail -1 | awk '{ print $1 }')
    echo "${h:-nan} ${v:-nan}" >>"$work/rounds"
    rows="$rows${rows:+, }{\"headroom_fps\": ${h:-null}, \"v4l2_ctl_fps\": ${v:-null}}"
    i=$((i + 1))
done
hm=$(awk '$1 != "nan" { print $1 }' "$work/rounds" | median)
vm=$(awk '$2 != "nan" { print $2 }' "$work/rounds" | median)
ratio=$(awk -v h="$hm" -v v="$vm" 'BEGIN { if (h != "" && v != "" && v > 0) printf "%.4f", h / v }')
printf '{"kind": "vs-v4l2-ctl", "device": "%s", "format": "%s", "size": "%s", "fps": %s, "frames": %s, "rounds": [%s], ' \
    "$dev" "$fmt" "$size" "$fps" "$frames" "$rows"
printf '"headroom_median_fps": %s, "v4l2_ctl_median_fps": %s, "ratio": %s}\n' \
    "${hm:-null}" "${vm:-null}" "${ratio:-null}"
