"""Boot one board in QEMU and bring its documents back.

The lab adds to the board's own arguments what it needs to drive it: the kernel and initramfs,
the serial console on QEMU's stdin/stdout, the monitor on a unix socket, `-nodefaults` (no
device the board did not ask for), serials on disks that have none (the guest finds disks by
serial) and, on the board's `-netdev user,...`, a port forwarded from 127.0.0.1 to the guest's
iperf3 port. The console protocol is described in lab/guest/init.
"""

import base64
import zlib
import json
import os
import queue
import re
import socket
import subprocess
import threading
import time

from board import SCRATCH_BYTES, aer_inject_record, join_props
import checks

# Whole-board limit: TCG boots an arm64 kernel in about a minute on a shared core; the steps
# have their own limits in the guest.
BOARD_SECONDS = 900
GUEST_IPERF_PORT = 5201
# Kernel console lines that say why a board stopped answering. The guest's `dmesg -n 1` lets
# only KERN_EMERG through (a soft lockup, a panic); the others show when it is raised to debug.
# A file the guest sends is written under the board's out/ by the name it gives: a plain name
# only (no directory, no `..`, no leading dot), so a guest cannot write elsewhere on the host.
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# The most bytes one file from a guest may take, as sent (base64) and once decompressed: the
# lab's largest file, a survey's HTML report, is a few MB. A guest is not trusted to stay
# under it, so a longer stream or a gzip that inflates past it is dropped with a warning.
MAX_FILE_BYTES = 64 << 20


def inflate(chunks, limit):
    """The gzip data that CHUNKS (base64 lines) carry, or ValueError when it is damaged or
    inflates past LIMIT bytes (read at most LIMIT + 1 bytes, never the whole bomb)."""
    z = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = z.decompress(base64.b64decode("".join(chunks)), limit + 1)
    if len(data) > limit:
        raise ValueError(f"it inflates past {limit} B")
    if not z.eof:
        raise ValueError("the gzip stream is cut short")
    return data

# The address the host side's servers listen on: QEMU's user network (slirp) connects the
# guest's 10.0.2.2 to the host's loopback, so nothing else needs to reach them.
HOST_LOOPBACK = "127.0.0.1"
KERNEL_ALARMS = ("soft lockup", "hard LOCKUP", "rcu: INFO", "blocked for more than", "Kernel panic", "Oops")


# Every child process a boot started (QEMU, host-side servers), for stop_all().
children = set()
children_lock = threading.Lock()


def spawn(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    with children_lock:
        children.add(p)
    return p


def stop_all():
    """Kill every child still running (lab/run interrupted)."""
    with children_lock:
        for p in children:
            if p.poll() is None:
                p.kill()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def disk_serials(board):
    """{drive id: serial} for every disk, the serial the guest will find it by. Disks without
    one get `lab-<drive id>` (added to the device that carries it: nvme, usb-storage, or the
    usb-uas a scsi-hd sits on)."""
    out = {}
    for dev, drive in board.disks():
        carrier = dev
        if dev.driver == "scsi-hd":
            carrier = board.by_id.get(dev.props.get("bus", "").split(".")[0], dev)
        if "serial" not in carrier.props:
            carrier.props["serial"] = f"lab-{drive}"[:20]
        out[drive] = carrier.props["serial"]
    return out


def prepare_drives(board, workdir):
    """Create each -drive's missing file (sparse, 256 MiB), ext4 where the board says so.
    Relative names are in the board's work directory, made anew for every run."""
    paths = {}
    for drive_id, d in board.drives.items():
        f = d.props["file"]
        path = f if os.path.isabs(f) else os.path.join(workdir, f)
        if not os.path.exists(path):
            with open(path, "xb") as img:
                img.truncate(SCRATCH_BYTES)
            if drive_id in board.ext4:
                subprocess.run(["mkfs.ext4", "-q", "-F", "-L", drive_id, path], check=True)
        paths[drive_id] = path
    return paths


def qemu_command(board, kernel, initrd, monitor_sock, drive_paths, hostfwd_port, accel):
    cmd = [board.qemu, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"]
    if accel == "tcg" and board.arch == "x86_64":
        # One host thread for every vCPU: x86 Linux patches its code live with int3 (text_poke_bp,
        # each time a tracepoint such as `bench latency --split`'s is enabled or disabled), and
        # under multi-threaded TCG (Debian 12's QEMU 7.2) the other vCPU can keep executing the
        # old int3 in the IPI handler being patched: the guest hangs (an RCU stall on CPU 0 in
        # exc_int3 from __sysvec_call_function_single, a soft lockup of the patching task). A
        # guest toggling irq_vectors:call_function_single_entry 400 times hung at once with
        # thread=multi and finished with thread=single; the lab's survey step hung so in CI.
        accel = "tcg,thread=single"
    cmd += ["-accel", accel]
    drives = {d.line: d for d in board.drives.values()}
    devices = {d.line: d for d in board.devices}
    for i, (opt, value, line) in enumerate(board.args):
        # -drive and -device are written back from their parsed form: the lab's file paths
        # and serials in.
        if opt == "-drive" and line in drives:
            d = drives[line]
            value = join_props("file=" + drive_paths[d.id].replace(",", ",,"),
                               {k: v for k, v in d.props.items() if k != "file"})
        elif opt == "-device" and line in devices:
            value = join_props(devices[line].driver, devices[line].props)
        elif opt == "-netdev" and i == board.user_netdev() and hostfwd_port:
            value += f",hostfwd=tcp:127.0.0.1:{hostfwd_port}-:{GUEST_IPERF_PORT}"
        cmd.append(opt)
        if value is not None:
            cmd.append(value)
    cmd += ["-kernel", kernel, "-initrd", initrd]
    cmd += ["-append", f"console={board.console} panic=-1 rdinit=/init"]
    cmd += ["-serial", "stdio", "-monitor", f"unix:{monitor_sock},server=on,wait=off"]
    return cmd


class Result:
    """What came back from one boot."""

    def __init__(self):
        self.files = {}  # name -> bytes
        self.rc = {}  # step -> exit code
        self.disks = {}  # serial -> block device name
        self.kernel = None  # the release the guest's busybox `uname -r` says it booted
        self.nic = None
        self.warnings = []
        self.done = False
        self.host = {}  # name -> (exit code, stdout, stderr) of the host side's net runs
        self.error = None
        self.booted = False
        self.seconds = None
        self.qemu = []  # QEMU's own lines (`qemu-system-x86_64: ...`): its errors and warnings


def monitor_command(sock_path, command, timeout=10):
    """Send one HMP command to QEMU's monitor and return what it answered."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        buf = b""
        while b"(qemu)" not in buf:
            buf += s.recv(4096)
        s.sendall(command.encode() + b"\n")
        buf = b""
        deadline = time.monotonic() + timeout
        while buf.count(b"(qemu)") < 1 and time.monotonic() < deadline:
            try:
                chunk = s.recv(4096)
            except socket.timeout:
                break
            if not chunk:
                break
            buf += chunk
        return buf.decode(errors="replace")


# Between two AER errors injected at a board, so that the guest's kernel takes each one on its
# own (two errors of one name pending at once are one count in the kernel's aer_dev_* files).
AER_PAUSE_SECONDS = 1.0
# How long a device QEMU was asked to remove may take to go: Linux's pciehp waits 5 s after
# the attention button (QEMU presses it for device_del) before it powers the slot off.
UNPLUG_SECONDS = 30
# How long a removed device's slot stays empty before the next command (a `device_add` of it):
# a guest whose kernel removes and enumerates again within one interval of a watch (200 ms)
# would show the watch no departure at all.
EMPTY_SLOT_SECONDS = 2.0


def next_line(lines, timeout):
    """The guest's next `@@LAB` line (its words), or None after TIMEOUT s or at QEMU's end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if line is None:
            lines.put(None)
            return None
        i = line.find("@@LAB ")
        if i >= 0:
            return line[i + 6 :].split()
    return None


def inject(board, step, monitor_sock, answer, next_guest_line, result):
    """Act on the board while its step STEP runs: each `during STEP:` line in the board file's
    order. A QEMU monitor command is sent to the monitor (after `device_del ID`, until QEMU no
    longer lists ID); `aer_inject DEVICE ERROR` is a record the guest writes to its kernel's
    /dev/aer_inject: the host answers `aer ESCAPES` and waits for the guest's `injected`."""
    addr = checks.pci_addresses(board)
    for command, _ in board.during.get(step, []):
        words = command.split()
        if words[0] == "aer_inject":
            answer(f"aer {aer_inject_record(addr[words[1]], words[2])}")
            reply = next_guest_line(30)
            said = " ".join(reply or ["nothing within 30 s"])
            result.host[f"during {step}: {command}"] = (0 if reply == ["injected"] else 1, said, "")
            time.sleep(AER_PAUSE_SECONDS)
            continue
        reply = monitor_command(monitor_sock, command)
        result.host[f"during {step}: {command}"] = (0, reply, "")
        if words[0] == "pcie_aer_inject_error":
            time.sleep(AER_PAUSE_SECONDS)
        elif words[0] == "device_del" and len(words) > 1:
            deadline = time.monotonic() + UNPLUG_SECONDS
            while f'id "{words[1]}"' in monitor_command(monitor_sock, "info pci") and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(EMPTY_SLOT_SECONDS)


def boot(board, kernel, initrd, workdir, host_headroom, accel, log=print):
    """Boot BOARD, answer its console, and return a Result. The serial log is workdir/serial.log."""
    result = Result()
    start = time.monotonic()
    drive_paths = prepare_drives(board, workdir)
    monitor_sock = os.path.join(workdir, "monitor.sock")
    hostfwd = free_port() if "net" in board.steps and board.user_netdev() is not None else None
    cmd = qemu_command(board, kernel, initrd, monitor_sock, drive_paths, hostfwd, accel)
    with open(os.path.join(workdir, "qemu.cmd"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    serial = open(os.path.join(workdir, "serial.log"), "wb")
    proc = spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = queue.Queue()

    def reader():
        for raw in proc.stdout:
            serial.write(raw)
            serial.flush()
            lines.put(raw.decode(errors="replace").rstrip("\r\n"))
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()

    def answer(text):
        proc.stdin.write(text.encode() + b"\n")
        proc.stdin.flush()

    deadline = start + BOARD_SECONDS
    current = None  # [name, [base64 lines] or None once too long, their length]
    running = None  # the step running now
    alarm = None  # the kernel's first emergency line (the console shows only those)
    servers = []
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                result.error = f"the board did not finish within {BOARD_SECONDS} s"
                if running:
                    result.error += f", in step {running}"
                if alarm:
                    result.error += f"; the kernel said: {alarm}"
                break
            if line is None:
                break
            if current is not None:
                if line.startswith("@@LAB end "):
                    name, chunks, _ = current
                    try:
                        if chunks is None:
                            raise ValueError(f"it is longer than {MAX_FILE_BYTES} B as sent")
                        data = inflate(chunks, MAX_FILE_BYTES)
                        if name is not None:
                            result.files[name] = data
                    except (ValueError, OSError, zlib.error) as e:
                        result.warnings.append(f"{name} came back damaged or too large ({e}): not written")
                    current = None
                elif current[1] is not None:
                    current[1].append(line.strip())
                    current[2] += len(line)
                    if current[2] > MAX_FILE_BYTES:
                        current[1] = None
                continue
            if line.startswith(board.qemu + ":"):
                result.qemu.append(line.strip())
                continue
            i = line.find("@@LAB ")
            if i < 0:
                if alarm is None and any(a in line for a in KERNEL_ALARMS):
                    alarm = line.strip()
                continue
            words = line[i + 6 :].split()
            if not words:
                continue
            what = words[0]
            if what == "file":
                name = words[1] if len(words) > 1 else ""
                if not PLAIN_NAME.fullmatch(name):
                    result.warnings.append(f"the guest sent a file named {name!r}: not a plain file name, "
                                           "not written (the lab writes only NAME under out/)")
                    name = None
                current = [name, [], 0]
            elif what == "boot":
                result.booted = True
                result.kernel = words[1] if len(words) > 1 else None
            elif what == "rc":
                result.rc[words[1]] = int(words[2])
                running = None
            elif what == "disk":
                result.disks[words[1]] = words[2] if len(words) > 2 else None
            elif what == "nic":
                result.nic = words[1] if len(words) > 1 else None
            elif what == "warn":
                result.warnings.append(" ".join(words[1:]))
            elif what == "run":
                running = words[1] if len(words) > 1 else None
                log(f"{board.name}: {' '.join(words[1:3])} ... ({time.monotonic() - start:.0f} s)")
            elif what == "ready":
                for command, _ in board.monitor:
                    reply = monitor_command(monitor_sock, command)
                    result.host[f"monitor {command}"] = (0, reply, "")
                answer("go")
            elif what == "inject":
                step = words[1] if len(words) > 1 else ""
                inject(board, step, monitor_sock, answer, lambda t: next_line(lines, t), result)
                answer("go")
            elif what == "net-server":
                client = words[1]
                if client == "headroom":
                    argv = [host_headroom, "bench", "net", "127.0.0.1", "-p", str(hostfwd), "-t", "2", "--json", "--no-save"]
                else:
                    argv = ["iperf3", "-c", "127.0.0.1", "-p", str(hostfwd), "-t", "2", "-J"]
                result.host[f"net-host-client-{client}"] = run_host(argv, 120)
                answer("go")
            elif what == "net-client":
                hport, iport = free_port(), free_port()
                servers = [(name, start_host(argv)) for name, argv in host_servers(host_headroom, hport, iport)]
                wait_listening([hport, iport], 30)
                answer(f"go {hport} {iport}")
            elif what == "done":
                result.done = True
        for name, p in servers:
            result.host[name] = finish_host(p, 30)
    finally:
        if proc.poll() is None:
            try:
                proc.wait(timeout=20 if result.done else 0.1)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for _, p in servers:
            if p.poll() is None:
                p.kill()
                p.wait()
        serial.close()
        if os.path.exists(monitor_sock):
            os.unlink(monitor_sock)
    if not result.done and not result.error:
        result.error = (f"QEMU ended (exit code {proc.returncode}) "
                        + ("before the board finished" if result.booted else "before the guest's /init ran"))
        if result.qemu:
            # QEMU's refusal is its last line (a device it could not attach says `Warning:` but
            # stops QEMU all the same).
            result.error += f"; QEMU said: {result.qemu[-1]}"
    result.seconds = time.monotonic() - start
    out = os.path.join(workdir, "out")
    os.makedirs(out, exist_ok=True)
    for name, data in result.files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    with open(os.path.join(workdir, "result.json"), "w") as f:
        json.dump({k: getattr(result, k) for k in ("rc", "disks", "nic", "warnings", "done", "booted", "kernel", "host", "error", "seconds", "qemu")}, f)
    for name, (rc, stdout, stderr) in result.host.items():
        safe = name.replace(" ", "_").replace("/", "_")
        with open(os.path.join(out, safe + ".host.json"), "w") as f:
            f.write(stdout)
        with open(os.path.join(out, safe + ".host.err"), "w") as f:
            f.write(stderr + f"\nexit code {rc}\n")
    return result


def load(workdir):
    """The Result of the last boot in WORKDIR (lab/run --recheck)."""
    result = Result()
    with open(os.path.join(workdir, "result.json")) as f:
        for k, v in json.load(f).items():
            setattr(result, k, v)
    out = os.path.join(workdir, "out")
    for name in os.listdir(out):
        if not name.endswith((".host.json", ".host.err")):
            with open(os.path.join(out, name), "rb") as f:
                result.files[name] = f.read()
    return result


def wait_listening(ports, seconds):
    """Until every port has a listening TCP socket on this host (/proc/net/tcp{,6}: local
    address HEX_IP:HEX_PORT, state 0A), at most SECONDS."""
    want = {f":{p:04X}" for p in ports}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        listening = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    for line in f.readlines()[1:]:
                        fields = line.split()
                        if fields[3] == "0A":
                            listening.add(fields[1][fields[1].rindex(":"):])
            except OSError:
                pass
        if want <= listening:
            return True
        time.sleep(0.1)
    return False


def host_servers(host_headroom, hport, iport):
    """[(name, argv)] of the host side's servers for the board's clients: headroom's and
    iperf3's, each serving one test on the loopback only (the guest reaches it through QEMU's
    user network; no other machine can)."""
    return [
        ("net-host-server-headroom", [host_headroom, "bench", "net", "--server", "-1", "-B", HOST_LOOPBACK,
                                      "-p", str(hport), "--json", "--no-save"]),
        ("net-host-server-iperf3", ["iperf3", "-s", "-1", "-B", HOST_LOOPBACK, "-p", str(iport), "-J"]),
    ]


def run_host(argv, timeout):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return (p.returncode, p.stdout, p.stderr)
    except subprocess.TimeoutExpired as e:
        return (None, e.stdout or "", f"{argv[0]} did not end within {timeout} s")


def start_host(argv):
    return spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def finish_host(p, timeout):
    try:
        stdout, stderr = p.communicate(timeout=timeout)
        return (p.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        p.kill()
        stdout, stderr = p.communicate()
        return (None, stdout, stderr + f"\nstill running after {timeout} s: stopped")


def tail(workdir, n=40):
    try:
        with open(os.path.join(workdir, "serial.log"), "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    # The base64 of results is noise in a tail: keep the lines a person reads.
    keep = [l for l in text.splitlines() if not (len(l) >= 60 and " " not in l.strip())]
    return "\n".join(keep[-n:])


def smoke_kvm(board, kernel, initrd):
    """True when KVM boots this kernel to the lab's first console line within 30 s."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK) or board.arch != "x86_64" or os.uname().machine != "x86_64":
        return False
    cmd = [board.qemu, "-nodefaults", "-display", "none", "-no-reboot", "-accel", "kvm", "-m", "256",
           "-kernel", kernel, "-initrd", initrd, "-append", f"console={board.console} panic=-1 rdinit=/init",
           "-serial", "stdio"]
    p = spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ok = threading.Event()

    def reader():
        for raw in p.stdout:
            if b"@@LAB boot" in raw:
                ok.set()
                return

    threading.Thread(target=reader, daemon=True).start()
    ok.wait(30)
    p.kill()
    p.wait()
    return ok.is_set()
