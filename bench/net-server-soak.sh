#!/usr/bin/env bash
# `headroom bench net --server` against a loop of misbehaving clients interleaved with stock
# iperf3 clients, on loopback, for DURATION seconds (default 600): garbage, idle connections,
# huge strings, `iperf3 -P 128 -R`, clients killed mid-test. Checks that a server survives them:
#   - every stock client is served within its own duration + 2 s,
#   - the server's RSS and open file descriptors stay flat (first minute against the rest),
#   - the history is unchanged (the server saves nothing unless --save).
# Prints one line per round and a summary; exits 1 when a check fails.
#
#   bench/net-server-soak.sh                 # 10 minutes, target/release/headroom
#   DURATION=60 HEADROOM=target/debug/headroom bench/net-server-soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}
PORT=${PORT:-5299}
HEADROOM=${HEADROOM:-target/release/headroom}
command -v iperf3 >/dev/null || { echo "soak: needs iperf3" >&2; exit 2; }
command -v python3 >/dev/null || { echo "soak: needs python3" >&2; exit 2; }
if [[ ! -x $HEADROOM ]]; then
    cargo build --release -p headroom >&2
fi

work=$(mktemp -d)
export XDG_DATA_HOME=$work/xdg
mkdir -p "$XDG_DATA_HOME"
# The runs the history lists (the listing's own envelope has a time stamp).
runs() {
    "$HEADROOM" history --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("runs"))'
}
history_before=$(runs)

"$HEADROOM" bench net --server -p "$PORT" -i 0 >"$work/server.out" 2>"$work/server.err" &
server=$!
cleanup() {
    kill -INT "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 50); do
    grep -q "$(printf ':%04X ' "$PORT").* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null && break
    sleep 0.1
done

# Misbehaving clients, each bounded in time (python3: raw sockets).
misbehave() {
    timeout 20 python3 - "$PORT" "$1" <<'EOF' || true
import socket, struct, sys, time
port, kind = int(sys.argv[1]), sys.argv[2]
def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s
cookie = b"soaksoaksoaksoaksoaksoaksoaksoaksoak\0"
try:
    if kind == "garbage":
        s = conn(); s.sendall(b"\xff" * 4096); time.sleep(0.2); s.close()
    elif kind == "idle":
        socks = [conn() for _ in range(18)]; time.sleep(5)
        for s in socks: s.close()
    elif kind == "huge":
        s = conn(); s.sendall(cookie); s.recv(1)
        body = b'{"tcp":true,"time":1,"client_version":"' + b"v" * (4 << 20) + b'"}'
        s.sendall(struct.pack(">I", len(body)) + body[:65536]); s.recv(16); s.close()
    elif kind == "params":
        for p in [b'{"tcp":true,"time":0}', b'{"tcp":true,"time":1,"parallel":10000}']:
            s = conn(); s.sendall(cookie); s.recv(1)
            s.sendall(struct.pack(">I", len(p)) + p); s.recv(16); s.close()
except OSError:
    pass
EOF
}

# `iperf3 -t T ...` must end within T + 2 s; its time is printed.
stock() {
    local t=$1; shift
    local t0 t1
    t0=$(date +%s.%N)
    if ! timeout $((t + 30)) iperf3 -c 127.0.0.1 -p "$PORT" -t "$t" "$@" >"$work/iperf3.out" 2>&1; then
        echo "FAIL iperf3 -t $t $*: $(tail -1 "$work/iperf3.out")"
        return 1
    fi
    t1=$(date +%s.%N)
    python3 -c "import sys; d=$t1-$t0; print(f'{d:.2f}'); sys.exit(0 if d <= $t + 2 else 1)"
}

rss_fds() {
    echo "$(awk '/VmRSS/{print $2}' "/proc/$server/status") $(ls "/proc/$server/fd" | wc -l)"
}

fail=0
served=0
declare -a samples
start=$(date +%s)
round=0
while (( $(date +%s) - start < DURATION )); do
    round=$((round + 1))
    misbehave garbage
    misbehave idle &
    idle=$!
    sleep 0.5
    if s=$(stock 2); then served=$((served + 1)); else echo "round $round: iperf3 -t 2 took ${s}"; fail=1; fi
    wait "$idle"
    misbehave huge
    misbehave params
    # -P 128 -R: a client that tries to jam the server (its own duration is 1 s; setting up 128
    # streams on a loaded machine takes seconds: it is judged by the next client).
    timeout 60 iperf3 -c 127.0.0.1 -p "$PORT" -t 1 -P 128 -R >/dev/null 2>&1 || true
    if s=$(stock 1); then served=$((served + 1)); else echo "round $round: iperf3 -t 1 after -P 128 -R took ${s}"; fail=1; fi
    # A client killed in the middle of its test.
    iperf3 -c 127.0.0.1 -p "$PORT" -t 10 >/dev/null 2>&1 &
    victim=$!
    sleep 1.5
    kill -9 "$victim" 2>/dev/null || true
    wait "$victim" 2>/dev/null || true
    if s=$(stock 1 -R); then served=$((served + 1)); else echo "round $round: iperf3 -t 1 -R after a killed client took ${s}"; fail=1; fi
    samples+=("$(( $(date +%s) - start )) $(rss_fds)")
    echo "round $round at $(( $(date +%s) - start )) s: server RSS kB, fds: $(rss_fds)"
done

history_after=$(runs)
python3 - "$fail" "$served" "${samples[@]}" <<'EOF' || fail=1
import sys
fail, served = int(sys.argv[1]), int(sys.argv[2])
rows = [tuple(map(int, s.split())) for s in sys.argv[3:]]
first = [r for r in rows if r[0] <= 60] or rows[:1]
rest = [r for r in rows if r[0] > 60] or rows[-1:]
rss0, rss1 = max(r[1] for r in first), max(r[1] for r in rest)
fd0, fd1 = max(r[2] for r in first), max(r[2] for r in rest)
print(f"soak: {len(rows)} rounds, {served} stock iperf3 clients served in time; "
      f"server RSS max {rss0} kB in the first minute, {rss1} kB after; "
      f"open fds max {fd0}, then {fd1}")
# Flat: after the first minute no more than 10 % (and 2 MB) above it; fds not above.
grew = rss1 > rss0 * 1.10 and rss1 - rss0 > 2048
sys.exit(1 if fail or grew or fd1 > fd0 else 0)
EOF
if [[ $history_before != "$history_after" ]]; then
    echo "soak: FAIL: the history changed"
    fail=1
else
    echo "soak: the history is unchanged ($history_after)"
fi
exit $fail
