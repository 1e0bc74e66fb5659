#!/usr/bin/env bash
# `headroom bench net --server` against a loop of misbehaving clients interleaved with stock
# iperf3 clients, on loopback, for DURATION seconds (default 600). Two servers run side by
# side:
#   A: `bench net -s` (one test at a time): garbage, idle connections, huge strings, absurd
#      parameters, `iperf3 -P 128 -R`, clients killed mid-test, connections that send a
#      cookie and nothing more, and a client whose result message claims absurd numbers
#      (start_time -1.7e308, end_time 1.7e308, 1.7e308 bytes);
#   B: a lab's server with authentication and metrics (`--clients 4 --textfile-dir DIR
#      --rsa-private-key-path ... --authorized-users-path ...`): cookie-only connections
#      held open while authorized stock clients run (two at once), unauthenticated clients,
#      the absurd client with valid credentials, and its token replayed.
# Checks:
#   - every stock client (on B: every authorized one) is served within its duration + 2 s,
#   - a replayed token is refused, and both servers stay up,
#   - the servers' RSS and open file descriptors stay flat (first minute against the rest),
#   - B's textfile is valid for `promtool check metrics` at every read (once per round),
#   - the history is unchanged (a server saves nothing unless --save).
# Prints one line per round and a summary; exits 1 when a check fails.
#
#   bench/net-server-soak.sh                 # 10 minutes, target/release/headroom
#   DURATION=60 HEADROOM=target/debug/headroom bench/net-server-soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}
PORT=${PORT:-5299}
PORT_B=${PORT_B:-5298}
HEADROOM=${HEADROOM:-target/release/headroom}
for tool in iperf3 python3 openssl promtool; do
    command -v "$tool" >/dev/null || { echo "soak: needs $tool (promtool: Debian's prometheus)" >&2; exit 2; }
done
if [[ ! -x $HEADROOM ]]; then
    cargo build --release -p headroom >&2
fi

work=$(mktemp -d)
export XDG_DATA_HOME=$work/xdg
mkdir -p "$XDG_DATA_HOME" "$work/textfile"
# The runs the history lists (the listing's own envelope has a time stamp).
runs() {
    "$HEADROOM" history --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("runs"))'
}
history_before=$(runs)

# iperf3's authentication: a key, its public half, and mario/rossi authorized.
openssl genrsa -out "$work/private.pem" 2048 2>/dev/null
openssl rsa -in "$work/private.pem" -pubout -out "$work/public.pem" 2>/dev/null
echo "mario,$(printf '%s' '{mario}rossi' | sha256sum | cut -d' ' -f1)" >"$work/users.csv"
# A token as iperf3 3.12 makes it (iperf_auth.c): PKCS#1 v1.5 with the public key, base64.
token() {
    printf 'user: mario\npwd:  rossi\nts:   %s' "$(date +%s)" |
        openssl pkeyutl -encrypt -pubin -inkey "$work/public.pem" -pkeyopt rsa_padding_mode:pkcs1 |
        base64 -w0
}

"$HEADROOM" bench net --server -p "$PORT" -i 0 >"$work/server.out" 2>"$work/server.err" &
server=$!
"$HEADROOM" bench net --server -p "$PORT_B" -i 0 --clients 4 --textfile-dir "$work/textfile" \
    --rsa-private-key-path "$work/private.pem" --authorized-users-path "$work/users.csv" \
    >"$work/server-b.out" 2>"$work/server-b.err" &
server_b=$!
cleanup() {
    kill -INT "$server" "$server_b" 2>/dev/null || true
    wait "$server" "$server_b" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for p in "$PORT" "$PORT_B"; do
    for _ in $(seq 50); do
        grep -q "$(printf ':%04X ' "$p").* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null && break
        sleep 0.1
    done
done

# Misbehaving clients, each bounded in time (python3: raw sockets).
#   misbehave KIND [PORT [TOKEN]]: fails only when an "absurd" or "replay" client did not
#   get what it must.
misbehave() {
    timeout 30 python3 - "${2:-$PORT}" "$1" "${3:-}" <<'PY'
import json, os, socket, struct, sys, time
port, kind, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=10)
def new_cookie():
    return os.urandom(18).hex().encode() + b"\0"
cookie = b"soaksoaksoaksoaksoaksoaksoaksoaksoak\0"
def framed(b):
    return struct.pack(">I", len(b)) + b
def state(s):
    b = s.recv(1)
    return struct.unpack("b", b)[0] if b else None
def params():
    auth = ',"authtoken":"%s"' % token if token else ""
    return ('{"tcp":true,"time":1,"parallel":1,"len":131072,"client_version":"3.12"%s}'
            % auth).encode()
def recv_exact(s, n):
    b = b""
    while len(b) < n:
        k = s.recv(n - len(b))
        if not k:
            raise OSError("closed")
        b += k
    return b
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
    elif kind == "cookie-only":
        # Two connections that send a fresh cookie and nothing more, opened again as soon
        # as the server drops them, for 6 s.
        end = time.time() + 6
        socks = []
        while time.time() < end:
            while len(socks) < 2:
                s = conn(); s.sendall(new_cookie()); s.setblocking(False); socks.append(s)
            for s in list(socks):
                try:
                    while True:
                        b = s.recv(64)
                        if b == b"":
                            s.close(); socks.remove(s); break
                except BlockingIOError:
                    pass
                except OSError:
                    s.close(); socks.remove(s)
            time.sleep(0.1)
        for s in socks: s.close()
    elif kind in ("absurd", "replay"):
        # A whole 1 s test whose result message claims what no test can do; "replay" sends
        # a token already used and must be refused (SERVER_ERROR, then 142).
        c = new_cookie()
        s = conn(); s.sendall(c)
        if state(s) != 9: sys.exit("%s: no PARAM_EXCHANGE" % kind)
        s.sendall(framed(params()))
        st = state(s)
        if kind == "replay":
            if st == -2 and struct.unpack(">i", recv_exact(s, 4))[0] == 142:
                sys.exit(0)
            sys.exit("a replayed token was accepted (state %s)" % st)
        if st != 10: sys.exit("absurd: state %s after the parameters" % st)
        d = conn(); d.sendall(c)
        if state(s) != 1 or state(s) != 2: sys.exit("absurd: no TEST_START, TEST_RUNNING")
        t = time.time(); block = b"\0" * 65536
        while time.time() - t < 1:
            d.sendall(block)
        s.sendall(bytes([4]))
        if state(s) != 13: sys.exit("absurd: no EXCHANGE_RESULTS")
        absurd = {"cpu_util_total": 1e308, "cpu_util_user": -1e308, "cpu_util_system": 1e308,
                  "sender_has_retransmits": 1,
                  "streams": [{"id": 1, "bytes": 1.7e308, "retransmits": 1e300, "jitter": 1e308,
                               "errors": -5, "packets": 1e308, "start_time": -1.7e308,
                               "end_time": 1.7e308}]}
        s.sendall(framed(json.dumps(absurd).encode()))
        n = struct.unpack(">I", recv_exact(s, 4))[0]; recv_exact(s, n)
        if state(s) != 14: sys.exit("absurd: no DISPLAY_RESULTS")
        s.sendall(bytes([16])); s.close(); d.close()
except OSError as e:
    if kind in ("absurd", "replay"):
        sys.exit("%s: %s" % (kind, e))
PY
}

# `iperf3 -t T ...` must end within T + 2 s; its time is printed. stock T PORT [ARGS...]
stock() {
    local t=$1 port=$2; shift 2
    local t0 t1 out
    out=$(mktemp -p "$work")
    t0=$(date +%s.%N)
    if ! timeout $((t + 30)) iperf3 -c 127.0.0.1 -p "$port" -t "$t" "$@" >"$out" 2>&1; then
        echo "FAIL iperf3 -t $t $*: $(tail -1 "$out")"
        return 1
    fi
    t1=$(date +%s.%N)
    python3 -c "import sys; d=$t1-$t0; print(f'{d:.2f}'); sys.exit(0 if d <= $t + 2 else 1)"
}
# An authorized stock client of B: authorized T [ARGS...]
authorized() {
    IPERF3_PASSWORD=rossi stock "$1" "$PORT_B" --username mario \
        --rsa-public-key-path "$work/public.pem" "${@:2}"
}

rss_fds() {
    echo "$(awk '/VmRSS/{print $2}' "/proc/$1/status") $(ls "/proc/$1/fd" | wc -l)"
}
alive() {
    local pid
    for pid in "$server" "$server_b"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "soak: FAIL: server $pid exited: $(tail -3 "$work"/server*.err)"
            return 1
        fi
    done
}
# B's textfile, as node_exporter reads it now.
textfile_reads=0
textfile_ok() {
    local f=$work/textfile/headroom-net.prom
    [[ -f $f ]] || return 0
    if ! promtool check metrics <"$f" >"$work/promtool.out" 2>&1; then
        echo "soak: FAIL: promtool: $(head -3 "$work/promtool.out")"
        return 1
    fi
    textfile_reads=$((textfile_reads + 1))
}

fail=0
served=0
served_b=0
replays=0
declare -a samples samples_b
start=$(date +%s)
round=0
while (( $(date +%s) - start < DURATION )); do
    round=$((round + 1))
    # A: the misbehaving clients, each beside or before a stock one.
    misbehave garbage || true
    misbehave idle &
    idle=$!
    misbehave cookie-only &
    squat=$!
    sleep 0.5
    if s=$(stock 2 "$PORT"); then served=$((served + 1)); else echo "round $round: iperf3 -t 2 took ${s}"; fail=1; fi
    wait "$idle" "$squat" || true
    misbehave huge || true
    misbehave params || true
    misbehave absurd || { echo "round $round: the absurd client on A failed"; fail=1; }
    # -P 128 -R: its own duration is 1 s; setting up 128 streams on a loaded machine takes
    # seconds: it is judged by the next client.
    timeout 60 iperf3 -c 127.0.0.1 -p "$PORT" -t 1 -P 128 -R >/dev/null 2>&1 || true
    if s=$(stock 1 "$PORT"); then served=$((served + 1)); else echo "round $round: iperf3 -t 1 after -P 128 -R took ${s}"; fail=1; fi
    # A client killed in the middle of its test.
    iperf3 -c 127.0.0.1 -p "$PORT" -t 10 >/dev/null 2>&1 &
    victim=$!
    sleep 1.5
    kill -9 "$victim" 2>/dev/null || true
    wait "$victim" 2>/dev/null || true
    if s=$(stock 1 "$PORT" -R); then served=$((served + 1)); else echo "round $round: iperf3 -t 1 -R after a killed client took ${s}"; fail=1; fi

    # B: cookie-only connections held while two authorized clients run at once, beside
    # unauthenticated ones.
    misbehave cookie-only "$PORT_B" &
    squat=$!
    misbehave params "$PORT_B" || true
    misbehave garbage "$PORT_B" || true
    sleep 0.5
    authorized 2 >"$work/b1" &
    b1=$!
    authorized 2 -R >"$work/b2" &
    b2=$!
    for j in b1 b2; do
        if wait "${!j}"; then served_b=$((served_b + 1)); else echo "round $round: authorized iperf3 -t 2 on B: $(cat "$work/$j")"; fail=1; fi
    done
    wait "$squat" || true
    # The absurd client with credentials, then its token once more.
    tok=$(token)
    misbehave absurd "$PORT_B" "$tok" || { echo "round $round: the absurd client on B failed"; fail=1; }
    if misbehave replay "$PORT_B" "$tok"; then replays=$((replays + 1)); else echo "round $round: a replayed token was not refused"; fail=1; fi
    if s=$(authorized 1); then served_b=$((served_b + 1)); else echo "round $round: authorized iperf3 -t 1 on B took ${s}"; fail=1; fi
    alive || { fail=1; break; }
    textfile_ok || fail=1
    now=$(( $(date +%s) - start ))
    samples+=("$now $(rss_fds "$server")")
    samples_b+=("$now $(rss_fds "$server_b")")
    echo "round $round at $now s: RSS kB, fds: A $(rss_fds "$server"), B $(rss_fds "$server_b")"
done

history_after=$(runs)
flat() {
    python3 - "$@" <<'PY'
import sys
name = sys.argv[1]
rows = [tuple(map(int, s.split())) for s in sys.argv[2:]]
first = [r for r in rows if r[0] <= 60] or rows[:1]
rest = [r for r in rows if r[0] > 60] or rows[-1:]
rss0, rss1 = max(r[1] for r in first), max(r[1] for r in rest)
fd0, fd1 = max(r[2] for r in first), max(r[2] for r in rest)
print(f"soak: server {name}: RSS max {rss0} kB in the first minute, {rss1} kB after; "
      f"open fds max {fd0}, then {fd1}")
# Flat: after the first minute no more than 10 % (and 2 MB) above it; fds not above.
grew = rss1 > rss0 * 1.10 and rss1 - rss0 > 2048
sys.exit(1 if grew or fd1 > fd0 else 0)
PY
}
echo "soak: $round rounds in $(( $(date +%s) - start )) s; $served stock iperf3 clients served in time on A, $served_b authorized ones on B; $replays replayed tokens refused; B's textfile valid at $textfile_reads of $round reads"
flat A "${samples[@]}" || fail=1
flat B "${samples_b[@]}" || fail=1
if [[ $history_before != "$history_after" ]]; then
    echo "soak: FAIL: the history changed"
    fail=1
else
    echo "soak: the history is unchanged ($history_after)"
fi
if (( fail )); then echo "soak: FAIL"; else echo "soak: PASS"; fi
exit $fail
