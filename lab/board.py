"""A board file: what the lab boots and what the checker expects from it.

    arch: x86_64 | aarch64 | armv7
    # comment
    -machine q35                                   QEMU arguments in QEMU's own syntax,
    -device pcie-root-port,id=rp1,bus=pcie.0,...   one option (with its value) per line
    -drive file=nvme.img,if=none,id=nvme0d,format=raw
    ext4: nvme0d          the lab makes this drive ext4; the board benches a file on it
    raw: spare0d          a spare disk the board benches with --destructive
    monitor: pcie_aer_inject_error rp1 BAD_TLP     sent to QEMU's monitor once the guest is up
    during watch: pcie_aer_inject_error rp4 MALF_TLP   sent while `headroom watch` runs
    during watch: aer_inject nic0 BAD_DLLP         injected by the guest's kernel (aer_inject)
    during watch-disk: pcie_aer_inject_error rp3 RCVR  sent while `bench disk` runs
    run: audit path disk raw latency count survey net   what runs inside (default: all that apply)

Everything the checker expects is derived from these lines (see checks.py), never from
headroom's output.
"""

import hashlib
import os
import re
import shlex
import struct

ARCHES = {
    # arch: (qemu binary, Debian architecture, kernel flavour, serial console, rust target)
    "x86_64": ("qemu-system-x86_64", "amd64", "amd64", "ttyS0", "x86_64-unknown-linux-musl"),
    "aarch64": ("qemu-system-aarch64", "arm64", "arm64", "ttyAMA0", "aarch64-unknown-linux-musl"),
    "armv7": ("qemu-system-arm", "armhf", "armmp", "ttyAMA0", "armv7-unknown-linux-musleabihf"),
}

# What a board that names only its devices boots on: the architecture's standard machine (its
# root complex is what the checker's PCI addresses assume: q35's pcie.0, virt's GPEX) with the
# lab's CPU, vCPUs and memory, as lab/boards/ use them. QEMU's defaults boot nothing here: the
# x86_64 default machine (pc, i440FX) has no PCIe and aarch64 and arm have no default machine.
DEFAULTS = {
    "x86_64": {"-machine": "q35", "-cpu": "max", "-smp": "2", "-m": "1024"},
    "aarch64": {"-machine": "virt", "-cpu": "max,pmu=on,pauth-impdef=on", "-smp": "2", "-m": "1024"},
    # highmem=off: Debian's armmp kernel has no LPAE, so PCIe's windows must sit below 4 GiB.
    "armv7": {"-machine": "virt,highmem=off", "-cpu": "cortex-a15", "-smp": "2", "-m": "1024"},
}
# The machines whose PCI layout the checker knows (-machine TYPE, or a versioned TYPE-x.y).
MACHINES = {"x86_64": "q35", "aarch64": "virt", "armv7": "virt"}

# QEMU's identifiers (id=): a letter, then letters, digits, '-', '.', '_' (util/id.c, id_wellformed).
QEMU_ID = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
# A disk's serial= as the guest's /init compares it: a plain word of at most 20 bytes (NVMe's
# serial number field, hw/nvme/ctrl.c), no blank, quote or shell syntax.
SERIAL = re.compile(r"[A-Za-z0-9._,-]{1,20}")

STEPS = ("audit", "path", "disk", "raw", "latency", "count", "survey", "net", "video", "watch", "watch-disk", "gadget", "capture")
# Steps that run while the host acts on the board (`during STEP:` lines): `headroom watch`, and
# `bench disk` on the ext4 with its link watch.
DURING_STEPS = ("watch", "watch-disk")
# QEMU 7.2's names of AER errors (hw/pci/pcie_aer.c, pcie_aer_error_list; the Linux aer-inject
# tool's names): name -> (bit of the Uncorrectable or Correctable Error Status register, correctable).
AER_ERRORS = {
    "DLP": (4, False), "SDN": (5, False), "POISON_TLP": (12, False), "FCP": (13, False),
    "COMP_TIME": (14, False), "COMP_ABORT": (15, False), "UNX_COMP": (16, False), "RX_OVER": (17, False),
    "MALF_TLP": (18, False), "ECRC": (19, False), "UNSUP": (20, False), "ACSV": (21, False),
    "INTN": (22, False), "MCBTLP": (23, False), "ATOP_EBLOCKED": (24, False), "TLP_PRF_BLOCKED": (25, False),
    "RCVR": (0, True), "BAD_TLP": (6, True), "BAD_DLLP": (7, True), "REP_ROLL": (8, True),
    "REP_TIMER": (12, True), "ADV_NONFATAL": (13, True), "INTERNAL": (14, True), "HL_OVERFLOW": (15, True),
}
# capture (a sysfs fixture tree for headroom's tests) runs only when `run:` names it.
DEFAULT_STEPS = STEPS[:-1]

# What a hostname holds in the lab: the board's name with any other byte made `-`, at most
# HOST_NAME_MAX (64) bytes (sethostname(2)).
NOT_IN_HOSTNAME = re.compile(r"[^A-Za-z0-9._-]")
HOST_NAME_MAX = 64

# Scratch images the lab creates for a -drive whose file= does not exist.
SCRATCH_BYTES = 256 << 20


class BoardError(Exception):
    """A board file the lab cannot use: the message names the file, the line and the fix."""


class Device:
    """One -device: its driver and its properties, as QEMU parses `driver,key=value,...`."""

    def __init__(self, spec, line):
        parts = split_props(spec)
        self.driver = parts[0]
        self.props = {}
        for p in parts[1:]:
            key, sep, value = p.partition("=")
            self.props[key] = value if sep else "on"
        self.line = line

    @property
    def id(self):
        return self.props.get("id")

    def __repr__(self):
        return f"Device({self.driver}, {self.props})"


def split_props(spec):
    """QEMU's option syntax: comma-separated, a doubled comma is a literal comma."""
    out, cur, i = [], "", 0
    while i < len(spec):
        c = spec[i]
        if c == "," and spec[i + 1 : i + 2] == ",":
            cur += ","
            i += 2
            continue
        if c == ",":
            out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    out.append(cur)
    return out


def join_props(head, props):
    return ",".join([head] + [f"{k}={v.replace(',', ',,')}" for k, v in props.items()])


class Board:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path).removesuffix(".board")
        self.arch = None
        self.args = []  # [(option, value or None, line number)]
        self.monitor = []  # [(command, line number)]
        self.during = {}  # step -> [(command, line number)], in the board file's order
        self.ext4 = []  # drive ids
        self.raw = []
        self.steps = None
        self.drive_lines = {}  # drive id named by ext4:/raw: -> line number
        self._parse()

    def fail(self, lineno, what):
        raise BoardError(f"{self.path}:{lineno}: {what}")

    def _parse(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise BoardError(f"{self.path}: cannot read the board file ({e.strerror}); give the path of a board file, e.g. lab/boards/x86_64-q35.board")
        for n, raw in enumerate(lines, 1):
            # `#` starts a comment: a whole line, or after a blank at the end of one.
            line = raw.strip()
            if line.startswith("#"):
                continue
            line = line.split(" #", 1)[0].strip()
            if not line:
                continue
            if line.startswith("-"):
                try:
                    words = shlex.split(line)
                except ValueError as e:
                    self.fail(n, f"{str(e).lower()} in {line!r}: quote a value whole or not at all")
                if len(words) > 2:
                    self.fail(n, f"one QEMU option per line, with at most one value: {line!r}")
                # -M is QEMU's short name of -machine.
                option = "-machine" if words[0] == "-M" else words[0]
                self.args.append((option, words[1] if len(words) > 1 else None, n))
                continue
            key, sep, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if not sep:
                self.fail(n, f"expected `-option value`, `arch:`, `ext4:`, `raw:`, `monitor:`, `during STEP:` or `run:`, found {line!r}")
            if key == "arch":
                if value not in ARCHES:
                    self.fail(n, f"arch {value!r} is not one of {', '.join(ARCHES)}")
                self.arch = value
            elif key == "monitor":
                self.monitor.append((value, n))
            elif key.startswith("during"):
                step = key.removeprefix("during").strip()
                if step not in DURING_STEPS:
                    self.fail(n, f"`during {step}:` names no step the host acts during; write "
                                 f"{' or '.join(f'`during {s}:`' for s in DURING_STEPS)}")
                words = value.split()
                if not words:
                    self.fail(n, f"`during {step}:` needs a command: a QEMU monitor command or `aer_inject DEVICE ERROR`")
                if words[0] == "aer_inject" and (len(words) != 3 or words[2] not in AER_ERRORS):
                    self.fail(n, f"`aer_inject DEVICE ERROR` takes a device id and one of QEMU's error names "
                                 f"({', '.join(AER_ERRORS)}), found {value!r}")
                self.during.setdefault(step, []).append((value, n))
            elif key in ("ext4", "raw"):
                for drive_id in value.split():
                    getattr(self, key).append(drive_id)
                    self.drive_lines[drive_id] = n
            elif key == "run":
                steps = value.split()
                bad = [s for s in steps if s not in STEPS]
                if bad:
                    self.fail(n, f"unknown step {' '.join(bad)}; steps are {' '.join(STEPS)}")
                self.steps = steps
            else:
                self.fail(n, f"unknown key {key!r}: the keys are arch, ext4, raw, monitor, during STEP, run")
        if not self.arch:
            raise BoardError(f"{self.path}: no `arch:` line; add `arch: x86_64`, `arch: aarch64` or `arch: armv7`")
        given = {o for o, _, _ in self.args}
        # Line 0: added by the lab, not the board file's.
        self.args = [(o, v, 0) for o, v in DEFAULTS[self.arch].items() if o not in given] + self.args
        for o, v, n in self.args:
            if o == "-machine" and v is not None:
                head = split_props(v)[0]
                kind = head.removeprefix("type=")
                want = MACHINES[self.arch]
                if kind != want and not kind.startswith(want + "-"):
                    self.fail(n, f"-machine {head}: the lab checks {self.arch} boards on QEMU's {want} machine "
                                 f"(its PCI Express layout); write `-machine {want}` or leave the line out")
        self.devices = [Device(v, n) for o, v, n in self.args if o == "-device" and v]
        self.drives = {}
        for o, v, n in self.args:
            if o == "-drive" and v:
                d = Device("drive," + v, n)
                if not d.id or "file" not in d.props:
                    self.fail(n, "a -drive needs id= and file= so a device can name it")
                self.drives[d.id] = d
        for d in self.devices + list(self.drives.values()):
            if d.id is not None and not QEMU_ID.fullmatch(d.id):
                self.fail(d.line, f"id={d.id!r} is not a QEMU identifier: start with a letter, then letters, digits, '-', '.' or '_'")
            serial = d.props.get("serial")
            if serial is not None and not SERIAL.fullmatch(serial):
                self.fail(d.line, f"serial={serial!r}: the guest finds disks by serial, so it must be 1 to 20 of "
                                  "A-Z a-z 0-9 . _ , - (no blank, quote or shell syntax)")
        self.by_id = {d.id: d for d in self.devices if d.id}
        for key in ("ext4", "raw"):
            if len(getattr(self, key)) > 1:
                extra = getattr(self, key)[1]
                self.fail(self.drive_lines[extra], f"one {key}: drive per board ({' and '.join(getattr(self, key))} given)")
        for drive_id in self.ext4 + self.raw:
            if drive_id not in self.drives:
                known = ", ".join(self.drives) or "none"
                self.fail(self.drive_lines[drive_id], f"{drive_id!r} is no -drive's id (the board's drives: {known})")
        for step, commands in self.during.items():
            for command, n in commands:
                words = command.split()
                if words[0] == "aer_inject" and words[1] not in self.by_id:
                    self.fail(n, f"aer_inject {words[1]}: no -device has id={words[1]}")
        if self.steps is None:
            self.steps = [s for s in DEFAULT_STEPS if self.step_applies(s)]

    @property
    def machine(self):
        """The machine type QEMU boots (`q35`, `virt`), the board's or the lab's default."""
        for o, v, _ in self.args:
            if o == "-machine" and v is not None:
                return split_props(v)[0].removeprefix("type=")
        return MACHINES[self.arch]

    # What the board has, for the steps and the checks.
    def disks(self):
        """Devices that are disks the guest sees as block devices: (device, drive id)."""
        out = []
        for d in self.devices:
            if d.driver in ("nvme", "usb-storage", "scsi-hd") and "drive" in d.props:
                out.append((d, d.props["drive"]))
        return out

    def nics(self):
        return [d for d in self.devices if "netdev" in d.props]

    def user_netdev(self):
        """The -netdev user,... argument index of the first NIC, if any."""
        for i, (o, v, n) in enumerate(self.args):
            if o == "-netdev" and v and v.startswith("user"):
                return i
        return None

    def step_applies(self, step):
        if step == "disk":
            return bool(self.ext4)
        if step == "raw":
            return bool(self.raw)
        if step == "net":
            return bool(self.nics()) and self.user_netdev() is not None
        if step == "watch":
            return "watch" in self.during
        if step == "watch-disk":
            return "watch-disk" in self.during and bool(self.ext4)
        return True

    # The board's identity, set by the guest's /init before anything runs: the boards' runs meet
    # in one history (lab/history.py), which tells boards apart by hostname and machine-id.
    @property
    def hostname(self):
        """The hostname the board runs under: its name (the board file's), with any byte a
        hostname should not hold made `-`."""
        return NOT_IN_HOSTNAME.sub("-", self.name)[:HOST_NAME_MAX] or "board"

    @property
    def machine_id(self):
        """The board's /etc/machine-id (machine-id(5): 32 lowercase hex digits): derived from
        its name, so two boards never share one and a board keeps its own from boot to boot,
        as a real board does."""
        return hashlib.sha256(f"headroom lab board {self.name}".encode()).hexdigest()[:32]

    @property
    def qemu(self):
        return ARCHES[self.arch][0]

    @property
    def deb_arch(self):
        return ARCHES[self.arch][1]

    @property
    def flavour(self):
        return ARCHES[self.arch][2]

    @property
    def console(self):
        return ARCHES[self.arch][3]

    @property
    def target(self):
        return ARCHES[self.arch][4]


def shell_conf(conf):
    """/lab/conf for the guest's /init, which sources it: `NAME=value` lines, each value quoted
    for the shell (a value is never code, whatever a board file puts in it)."""
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in conf.items())


def aer_inject_record(bdf, error):
    """What the guest writes to the kernel's /dev/aer_inject to inject ERROR (one of
    AER_ERRORS) at the function BDF (`0000:03:00.0`): a `struct aer_error_inj`
    (drivers/pci/pcie/aer_inject.c: u8 bus, dev, fn; u32 uncor_status, cor_status,
    header_log0..3, domain; natural alignment, 32 bytes, little-endian on the lab's
    architectures), as the octal escapes busybox printf turns into those bytes."""
    domain, bus, devfn = bdf.split(":")
    dev, fn = devfn.split(".")
    bit, correctable = AER_ERRORS[error]
    uncor, cor = (0, 1 << bit) if correctable else (1 << bit, 0)
    data = struct.pack("<BBBxIIIIIII", int(bus, 16), int(dev, 16), int(fn, 16), uncor, cor, 0, 0, 0, 0, int(domain, 16))
    return "".join(f"\\{b:03o}" for b in data)
