#!/usr/bin/env bash
# headroom bench net against iperf3, each tool against its own server, alternating
# iperf3, headroom, iperf3, headroom ... so drift of a shared machine hits both alike.
# Cases: loopback with 1, 2 and 4 streams, each both ways (-R: the server sends), and (as
# root) a veth pair shaped by tbf to 100 Mbit/s (overhead 24), single stream and -P 2.
# Prints per case the medians of the receiver's rate and of the CPU time of both ends per GB
# moved (user + system seconds of client and server), and the medians of the per-round
# ratios headroom / iperf3; on the shaped link also headroom's rate / its computed ceiling.
# Never fails on a timing: it reports.
#
# Usage: bench/vs-iperf3.sh ; env: ROUNDS (7), RUNTIME (5 s), HEADROOM (binary),
# IPERF3 (the iperf3 binary, e.g. one built from esnet/iperf's newest tag; default: iperf3
# on PATH), ONLY (a word that picks cases: loopback, shaped, P2, -R).
set -euo pipefail
. "$(dirname "$0")/common.sh"
rounds="${ROUNDS:-7}"
runtime="${RUNTIME:-5}"
iperf3="${IPERF3:-iperf3}"
need "$iperf3" iperf3
need_headroom
echo "vs-iperf3: $("$iperf3" --version | head -1) against $("$headroom" --version)" >&2
work="$(mktemp -d)"
ns="hrvs$$"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ip netns del "${ns}a" 2>/dev/null || true
    ip netns del "${ns}b" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

cases=()
for p in 1 2 4; do cases+=("loopback-P$p lo $p" "loopback-P$p-R lo $p -R"); done
if [ "$(id -u)" = 0 ] && command -v tc >/dev/null; then
    ip netns add "${ns}a"; ip netns add "${ns}b"
    ip link add va netns "${ns}a" type veth peer name vb netns "${ns}b"
    ip -n "${ns}a" addr add 10.79.0.1/24 dev va; ip -n "${ns}a" link set va up
    ip -n "${ns}b" addr add 10.79.0.2/24 dev vb; ip -n "${ns}b" link set vb up
    ip netns exec "${ns}a" tc qdisc add dev va root tbf rate 100mbit burst 64kb latency 50ms overhead 24
    ip -n "${ns}a" link set dev va gso_max_segs 1
    cases+=("shaped-P1 veth 1" "shaped-P2 veth 2")
else
    echo "vs-iperf3: not root (or no tc): the shaped-link cases are skipped" >&2
fi
if [ -n "${ONLY:-}" ]; then
    picked=()
    for c in "${cases[@]}"; do [[ "$c" == *"$ONLY"* ]] && picked+=("$c"); done
    [ ${#picked[@]} -gt 0 ] || { echo "vs-iperf3: ONLY=$ONLY matches no case" >&2; exit 2; }
    cases=("${picked[@]}")
fi

port=5299
run() { # tool where streams out [-R]
    local tool=$1 where=$2 streams=$3 out=$4 dir=("${@:5}") srv=() cli=() host=127.0.0.1
    if [ "$where" = veth ]; then srv=(ip netns exec "${ns}b"); cli=(ip netns exec "${ns}a"); host=10.79.0.2; fi
    port=$((port + 1))
    if [ "$tool" = iperf3 ]; then
        "${srv[@]}" "$iperf3" -s -1 -p "$port" >/dev/null 2>&1 & pids+=($!)
        sleep 0.5
        "${cli[@]}" "$iperf3" -c "$host" -p "$port" -t "$runtime" -O 1 -P "$streams" "${dir[@]}" \
            -J > "$out" || true
    else
        "${srv[@]}" "$headroom" bench net -s -1 -p "$port" --no-save --json >/dev/null 2>&1 & pids+=($!)
        sleep 0.5
        "${cli[@]}" "$headroom" bench net "$host" -p "$port" -t "$runtime" -O 1 -P "$streams" \
            "${dir[@]}" --json --no-save > "$out" 2>/dev/null || true
    fi
    wait "${pids[-1]}" 2>/dev/null || true
}

for ((r = 1; r <= rounds; r++)); do
    for c in "${cases[@]}"; do
        read -r name where streams dir <<< "$c"
        echo "round $r/$rounds: $name" >&2
        # shellcheck disable=SC2086 # dir is empty or -R
        run iperf3 "$where" "$streams" "$work/iperf3.$name.$r.json" $dir
        # shellcheck disable=SC2086
        run headroom "$where" "$streams" "$work/headroom.$name.$r.json" $dir
    done
done

python3 - "$work" "$rounds" "${cases[@]}" <<'PY'
import json, statistics, sys
work, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def iperf3(path):
    try:
        e = json.load(open(path))["end"]
        rx = e["sum_received"]
        cpu = e["cpu_utilization_percent"]
        secs = rx["seconds"]
        cpu_s = (cpu["host_total"] + cpu["remote_total"]) / 100.0 * secs
        return rx["bits_per_second"], cpu_s / (rx["bytes"] / 1e9), None
    except (KeyError, ValueError, ZeroDivisionError):
        return None
def headroom(path):
    try:
        d = json.load(open(path))
        m = d["measurement"]
        f = d["flows"][0]["summary"]
        local, peer = m["cpu_local"], m["cpu_peer"]
        cpu_s = local["total_percent"] / 100.0 * local["wall_s"] + peer["total_percent"] / 100.0 * peer["wall_s"]
        ceiling = d["ceiling"]["goodput_bytes_per_sec"] * 8.0 if d.get("ceiling") else None
        return f["receiver_bits_per_sec"], cpu_s / (f["receiver_bytes"] / 1e9), ceiling
    except (KeyError, ValueError, ZeroDivisionError, TypeError):
        return None
med = statistics.median
print(f"{'case':<13}{'iperf3':>12}{'headroom':>12}{'ratio':>7}{'min..max':>14}"
      f"{'CPU-s/GB':>10}{'headroom':>10}{'ratio':>7}{'h/ceiling':>10}{'rounds':>8}")
print(f"{'':<13}{'(Mbit/s)':>12}{'(Mbit/s)':>12}{'h/i':>7}{'':>14}{'iperf3':>10}{'':>10}{'h/i':>7}")
for c in cases:
    name = c.split()[0]
    pairs = [(iperf3(f"{work}/iperf3.{name}.{r}.json"), headroom(f"{work}/headroom.{name}.{r}.json"))
             for r in range(1, rounds + 1)]
    pairs = [(i, h) for i, h in pairs if i and h]
    if not pairs:
        print(f"{name:<13} no round completed for both tools")
        continue
    rate = [h[0] / i[0] for i, h in pairs]
    cpu = [h[1] / i[1] for i, h in pairs]
    ceil = [h[0] / h[2] for _, h in pairs if h[2]]
    print(f"{name:<13}{med(i[0] for i, _ in pairs) / 1e6:>12.2f}{med(h[0] for _, h in pairs) / 1e6:>12.2f}"
          f"{med(rate):>7.3f}{min(rate):>7.3f}..{max(rate):<6.3f}"
          f"{med(i[1] for i, _ in pairs):>10.3f}{med(h[1] for _, h in pairs):>10.3f}{med(cpu):>7.3f}"
          f"{(f'{med(ceil):.4f}' if ceil else '-'):>10}{len(pairs):>8}")
PY
