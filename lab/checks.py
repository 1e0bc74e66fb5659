"""The checker: what headroom must have reported, derived from the board file's QEMU arguments
(never from headroom's output), compared with the documents the board sent back.

QEMU 7.2's device models fix what the board file does not say; those facts are in the tables
below, each with the QEMU source that sets it.
"""

import json
import os
import re
import subprocess

from board import AER_ERRORS, Device

# -device driver -> (PCI class prefix, Linux driver). Class codes from QEMU's hw/ sources
# (hw/nvme/ctrl.c, hw/net/e1000e.c, hw/usb/hcd-xhci-pci.c, hw/usb/hcd-ehci-pci.c,
# hw/pci-bridge/*), drivers from Linux 6.1. All are PCI Express but usb-ehci, a conventional PCI
# device (no link).
PCI_DEVICES = {
    "pcie-root-port": ("0604", "pcieport"),
    "x3130-upstream": ("0604", "pcieport"),
    "xio3130-downstream": ("0604", "pcieport"),
    "nvme": ("010802", "nvme"),
    "e1000e": ("0200", "e1000e"),
    "qemu-xhci": ("0c0330", "xhci_hcd"),
    "usb-ehci": ("0c0320", "ehci-pci"),
}
BRIDGES = ("pcie-root-port", "x3130-upstream", "xio3130-downstream")
# QEMU 7.2 sets a link capability only on pcie-root-port (x-speed, x-width; defaults 16 GT/s
# x32, hw/pci-bridge/gen_pcie_root_port.c); every endpoint and switch port is 2.5 GT/s x1
# (hw/pci/pcie.c, pcie_cap_v1_fill).
ENDPOINT_LINK = (2.5, 1)
ROOT_PORT_DEFAULT = ("16", "32")
CONVENTIONAL_PCI = {"usb-ehci"}
# The root complex's own bus: q35's and virt's PCI Express root bus. A PCI Express endpoint
# placed on it is a root-complex integrated endpoint (hw/pci/pcie.c, pcie_endpoint_cap_init:
# PCI_EXP_TYPE_RC_END on a root bus), which has no link: Linux reads no link speed or width for
# it (drivers/pci/access.c, pcie_cap_has_lnkctl), and headroom reports none.
ROOT_BUS = "pcie.0"
# QEMU refusing a USB device whose speeds the port does not offer (hw/usb/bus.c,
# usb_device_attach); QEMU says "Warning:" but does not start.
ATTACH_REFUSED = re.compile(r'Warning: speed mismatch trying to attach usb device "(?P<product>[^"]*)" '
                            r'\((?P<dev>[\w ]+) speed\) to bus "(?P<bus>[^"]*)", port "(?P<port>[^"]*)" '
                            r'\((?P<port_speed>[\w ]+) speed\)')
# Fastest USB speed each device model offers (hw/usb/dev-*.c: desc_device_super/high/full),
# Mb/s; and each controller's root ports.
USB_DEVICE_MAX = {"usb-storage": 5000.0, "usb-uas": 5000.0, "usb-hub": 12.0}
USB_CONTROLLER_MAX = {"qemu-xhci": 5000.0, "usb-ehci": 480.0}
USB_TRANSPORT = {"usb-storage": ("bulk_only", "usb-storage"), "usb-uas": ("uas", "uas")}
# pcie_aer_inject_error's correctable error names (hw/pci/pcie_aer.c, pcie_aer_error_list).
AER_CORRECTABLE = {name for name, (_, correctable) in AER_ERRORS.items() if correctable}
# The names Linux 6.1 counts AER errors by in aer_dev_correctable, aer_dev_nonfatal and
# aer_dev_fatal, by status bit (drivers/pci/pcie/aer.c: aer_correctable_error_string,
# aer_uncorrectable_error_string; the bits are the PCIe Base Spec's, section 7.8.4.2 and 7.8.4.5).
KERNEL_CORRECTABLE = {0: "RxErr", 6: "BadTLP", 7: "BadDLLP", 8: "Rollover", 12: "Timeout", 13: "NonFatalErr",
                      14: "CorrIntErr", 15: "HeaderOF"}
KERNEL_UNCORRECTABLE = {0: "Undefined", 4: "DLP", 5: "SDES", 12: "TLP", 13: "FCP", 14: "CmpltTO", 15: "CmpltAbrt",
                        16: "UnxCmplt", 17: "RxOF", 18: "MalfTLP", 19: "ECRC", 20: "UnsupReq", 21: "ACSViol",
                        22: "UncorrIntErr", 23: "BlockedTLP", 24: "AtomicOpBlocked", 25: "TLPBlockedErr",
                        26: "PoisonTLPBlocked"}
# The uncorrectable errors QEMU 7.2's Uncorrectable Error Severity register makes fatal at reset
# (include/hw/pci/pcie_regs.h, PCI_ERR_UNC_SEVERITY_DEFAULT: DLP, SDN, FCP, RX_OVER, MALF_TLP,
# INTN); the others are nonfatal. Both injections take the severity from that register (QEMU's
# pcie_aer_inject_error, the kernel's aer_inject), and nothing in the lab's guests changes it.
FATAL_BITS = {4, 5, 13, 17, 18, 22}
# Whether a board's functions have SERR# Enable set in their Command register when the kernel
# starts: QEMU sends an uncorrectable error message only then (hw/pci/pcie_aer.c,
# pcie_aer_msg_alldev). SeaBIOS sets it on every q35 function (src/fw/pciinit.c,
# pci_bios_init_device); virt boots the kernel with no firmware, and Linux leaves it clear.
SERR_ENABLED = {"x86_64": True, "aarch64": False, "armv7": False}
# Slots QEMU's machines fill before the board's devices (hw/i386/pc_q35.c: host bridge 00.0,
# ICH9 LPC/SATA/SMBus 1f.x; hw/arm/virt.c: the GPEX host bridge 00.0).
MACHINE_SLOTS = {"x86_64": {0, 0x1F}, "aarch64": {0}, "armv7": {0}}
# vivid's webcam input, its first capture node with the module's defaults (Linux 6.1,
# drivers/media/test-drivers/vivid/vivid-vid-cap.c): webcam_sizes, webcam_intervals (time per
# frame), and a size at index i offers the first 2 * (6 - i) intervals (vidioc_enum_frameintervals).
VIVID_WEBCAM_SIZES = [(320, 180), (640, 360), (640, 480), (1280, 720), (1920, 1080), (3840, 2160)]
VIVID_WEBCAM_INTERVALS = [(1, 1), (1, 2), (1, 4), (1, 5), (1, 10), (2, 25), (1, 15), (1, 25), (1, 30),
                          (1, 40), (1, 50), (1, 60)]
# Bytes per pixel of the packed formats asked (the V4L2 uAPI's pixfmt-packed-yuv.rst, pixfmt-rgb.rst).
BYTES_PER_PIXEL = {"YUYV": 2, "RGB3": 3}
# What lab/guest/init's video step asks: (document, FOURCC, width, height, fps, frames).
VIDEO_RUNS = [("video-yuyv", "YUYV", 640, 480, 25, 50), ("video-rgb3", "RGB3", 320, 180, 30, 60)]
# vivid paces its frames by the clock at the interval set and numbers every frame it makes; one
# its thread could not make in time is skipped in the sequence numbers (vivid-kthread-cap.c), so
# the delivered rate times frames-and-gaps over frames is the rate set, within the pacing's
# jiffy granularity over a 2 s capture.
VIDEO_RATE_TOLERANCE = 0.05


def fourcc(code):
    """The V4L2 pixel format code of four characters (v4l2_fourcc: the first in the low byte)."""
    return int.from_bytes(code.ljust(4).encode(), "little")


# The gadget lab/guest/init configures: its name, ids and HID report length.
GADGET_NAME, GADGET_VID, GADGET_PID, HID_REPORT = "g1", 0x1D6B, 0x0104, 8
# USB 2.0 section 5.8.4 (table 5-10): 13 bulk transactions of 512 B fit a 7500 B high-speed
# microframe (55 B of protocol each), 8000 microframes a second.
USB2_HS_BULK = (7500 // (512 + 55)) * 512 * 8000
# f_hid's high-speed interrupt endpoint (drivers/usb/gadget/function/f_hid.c, Linux 6.1):
# bInterval 4, every 2^(4-1) microframes of 125 us (USB 2.0 table 9-13): one report each.
HS_HID_REPORTS_PER_S = 1 / (2 ** (4 - 1) * 125e-6)


def parse_addr(text):
    """QEMU's addr=: "0x10", "10", "10.1" (slot.function, hexadecimal)."""
    slot, _, func = text.partition(".")
    return int(slot, 16), int(func or "0", 16)


def pci_addresses(board):
    """{device id or driver#n: BDF} for the board's PCI devices, as QEMU places them (addr=, or
    the lowest free slot of the bus, in command-line order) and as Linux (or SeaBIOS) numbers
    buses: depth first, in slot order."""
    pci = [d for d in board.devices if d.driver in PCI_DEVICES]
    placed = {}  # bus name -> {(slot, func): device}
    for d in pci:
        bus = d.props.get("bus", "pcie.0")
        used = placed.setdefault(bus, {})
        if "addr" in d.props:
            sf = parse_addr(d.props["addr"])
        else:
            taken = {s for s, _ in used} | (MACHINE_SLOTS[board.arch] if bus == "pcie.0" else set())
            sf = (min(set(range(32)) - taken), 0)
        used[sf] = d
    out = {}
    next_bus = [1]

    def walk(bus_name, number):
        for (slot, func), d in sorted(placed.get(bus_name, {}).items()):
            out[key(d)] = f"0000:{number:02x}:{slot:02x}.{func}"
            if d.driver in BRIDGES and d.id:
                child = next_bus[0]
                next_bus[0] += 1
                walk(d.id, child)

    walk("pcie.0", 0)
    return out


def key(d):
    return d.id or f"{d.driver}@{d.line}"


def integrated(dev):
    """A PCI Express endpoint on the root bus: a root-complex integrated endpoint, no link."""
    return (dev.driver in PCI_DEVICES and dev.driver not in BRIDGES and dev.driver not in CONVENTIONAL_PCI
            and dev.props.get("bus", ROOT_BUS) == ROOT_BUS)


def attach_refusals(board, qemu_lines):
    """[(device, why)] for each USB device QEMU refused to attach, from QEMU's own lines."""
    out = []
    for line in qemu_lines:
        m = ATTACH_REFUSED.search(line)
        if not m:
            continue
        dev = next((d for d in board.devices if d.props.get("bus") == m["bus"] and d.props.get("port") == m["port"]), None)
        why = f"QEMU did not attach it, a {m['dev']}-speed device on a {m['port_speed']}-speed port"
        ctrl = board.by_id.get(m["bus"].split(".")[0])
        if ctrl is not None and ctrl.driver == "usb-ehci" and "high" in m["port_speed"]:
            why += (" (an EHCI without companion controllers has only high-speed ports: put the device on a "
                    "qemu-xhci, or behind a high-speed hub)")
        out.append((dev, f"{why}; QEMU said: {line}"))
    return out


def root_port_of(board, dev):
    """The pcie-root-port above DEV (following bus= through switches)."""
    d = dev
    while d is not None:
        bus = d.props.get("bus", "pcie.0").split(".")[0]
        parent = board.by_id.get(bus)
        if parent is None:
            return None
        if parent.driver == "pcie-root-port":
            return parent
        d = parent
    return None


def pci_chain(board, dev):
    """The board's PCI devices from DEV up to its root port, as keys."""
    out, d = [], dev
    while d is not None and d.driver in PCI_DEVICES:
        out.append(key(d))
        if d.driver == "pcie-root-port":
            break
        d = board.by_id.get(d.props.get("bus", "pcie.0").split(".")[0])
    return out


def root_port_cap(d):
    speed, width = d.props.get("x-speed", ROOT_PORT_DEFAULT[0]), d.props.get("x-width", ROOT_PORT_DEFAULT[1])
    return (float(speed.replace("_", ".")), int(width))


def injected(board, step):
    """{(BDF, severity, kernel's error name): count} of the AER errors the board's `during STEP:`
    lines inject, as the kernel counts them on the function they name (each error of QEMU's name
    is one status bit; its severity is the -c flag's or the severity register's), the functions
    errors were injected at, and the lines whose errors cannot be predicted (an error given as a
    number, an advisory one). QEMU 7.2 sends no error message for a correctable error injected
    through its monitor (hw/pci/pcie_aer.c: pcie_aer_msg_alldev lets only uncorrectable
    messages through, and those only with SERR# enabled), so the kernel counts none of those:
    only the status bit is set."""
    addr = pci_addresses(board)
    out, at, unknown = {}, set(), []
    for command, _ in board.during.get(step, []):
        words = command.split()
        if words[0] not in ("pcie_aer_inject_error", "aer_inject"):
            continue
        args = [w for w in words[1:] if not w.startswith("-")]
        if len(args) < 2 or args[1] not in AER_ERRORS or "-a" in words or args[0] not in addr:
            unknown.append(command)
            continue
        bit, correctable = AER_ERRORS[args[1]]
        at.add(addr[args[0]])
        if words[0] == "pcie_aer_inject_error" and (correctable or not SERR_ENABLED[board.arch]):
            continue
        if correctable:
            severity, name = "correctable", KERNEL_CORRECTABLE[bit]
        else:
            severity, name = ("fatal" if bit in FATAL_BITS else "nonfatal"), KERNEL_UNCORRECTABLE[bit]
        k = (addr[args[0]], severity, name)
        out[k] = out.get(k, 0) + 1
    return out, at, unknown


def replugged(board, step):
    """[(device id, its root port's id)] of the devices the `during STEP:` lines remove
    (device_del) and add again (a later device_add with the same id=)."""
    out, removed = [], []
    for command, _ in board.during.get(step, []):
        words = command.split()
        if words[0] == "device_del" and len(words) > 1:
            removed.append(words[1])
        elif words[0] == "device_add" and len(words) > 1:
            d = Device(words[1], 0)
            if d.id in removed:
                dev = board.by_id.get(d.id, d)
                rp = root_port_of(board, dev)
                out.append((d.id, rp.id if rp else None))
    return out


def counted(devices):
    """{(device, severity, error): count} of a watch's device summaries."""
    return {(d["device"], e["severity"], e["error"]): e["count"] for d in devices for e in d.get("errors", []) if e["count"]}


def link(d):
    return (d["speed_gts"], d["width"]) if d else None


def fmt(l):
    return f"{l[0]:g} GT/s x{l[1]}" if l else "none"


def usb_controller_and_speed(board, dev):
    """The PCI controller a USB device hangs from and the speed it should run at: the slowest of
    the device, every hub between and the controller."""
    speed = USB_DEVICE_MAX.get(dev.driver, 480.0)
    port = dev.props.get("port", "")
    bus = dev.props.get("bus", "").split(".")[0]
    ctrl = board.by_id.get(bus)
    if ctrl is None:
        return None, None
    speed = min(speed, USB_CONTROLLER_MAX.get(ctrl.driver, 480.0))
    # A device on port "3.1" sits behind the hub on port "3" of the same bus.
    parts = port.split(".")
    for i in range(1, len(parts)):
        hub_port = ".".join(parts[:i])
        hub = next((h for h in board.devices if h.driver == "usb-hub" and h.props.get("bus", "").split(".")[0] == bus
                    and h.props.get("port") == hub_port), None)
        if hub is not None:
            speed = min(speed, USB_DEVICE_MAX["usb-hub"])
    return ctrl, speed


class Checks:
    def __init__(self, board, result, serials, workdir, host_bin):
        self.b, self.r, self.serials, self.workdir, self.host_bin = board, result, serials, workdir, host_bin
        self.out = []
        self.docs = {}

    def ok(self, cond, what, why=""):
        self.out.append((bool(cond), what if cond or not why else f"{what}: {why}"))
        return bool(cond)

    def doc(self, name, kind, rc_ok=0):
        """The document NAME.json, checked to parse with KIND and its command to exit RC_OK."""
        if name in self.docs:
            return self.docs[name]
        data = self.r.files.get(f"{name}.json")
        rc = self.r.rc.get(name)
        err = self.r.files.get(f"{name}.err", b"").decode(errors="replace").strip().splitlines()
        why = f"exit code {rc}" + (f", stderr: {err[-1]}" if err else "")
        if data is None:
            self.ok(False, f"{name}: came back", "the board sent no document (see the serial log)")
            self.docs[name] = None
            return None
        try:
            d = json.loads(data)
        except ValueError as e:
            self.ok(False, f"{name}: JSON parses", f"{e} ({why})")
            self.docs[name] = None
            return None
        self.ok(d.get("kind") == kind and rc == rc_ok, f"{name}: exit {rc_ok}, a `{kind}` document",
                f"kind {d.get('kind')!r}, {why}")
        self.docs[name] = d
        return d

    def run(self):
        b = self.b
        self.ok(self.r.done and not self.r.error, "the board ran every step and powered off", self.r.error)
        for dev, why in attach_refusals(b, getattr(self.r, "qemu", [])):
            what = (f"{dev.driver} {dev.id or ''} on {dev.props.get('bus')} port {dev.props.get('port')}".replace("  ", " ")
                    if dev else "a USB device")
            self.ok(False, f"QEMU: {what} attaches", why)
        if not self.r.booted:
            return self.out
        for w in self.r.warnings:
            self.ok(False, f"board warning: {w}")
        if "audit" in b.steps:
            self.audit()
        if "path" in b.steps:
            self.paths()
        if "disk" in b.steps and b.ext4:
            self.engine("disk")
        if "raw" in b.steps and b.raw:
            self.engine("raw")
        if "latency" in b.steps:
            self.latency()
        if "count" in b.steps:
            self.count()
        if "survey" in b.steps:
            self.survey()
        if "net" in b.steps:
            self.net()
        if "video" in b.steps:
            self.video()
        if "watch" in b.steps:
            self.watch()
        if "watch-disk" in b.steps and b.ext4:
            self.watch_disk()
        if "gadget" in b.steps:
            self.gadget()
        return self.out

    # --- audit: PCI functions, links, AER, USB, NIC
    def audit(self):
        b = self.b
        d = self.doc("audit", "audit")
        if d is None:
            return
        addr = pci_addresses(b)
        funcs = {f["address"]: f for f in d["pci"]["functions"]}
        for dev in b.devices:
            if dev.driver not in PCI_DEVICES:
                continue
            bdf = addr[key(dev)]
            f = funcs.get(bdf)
            name = f"{dev.driver} {dev.id or ''} at {bdf}".replace("  ", " ")
            if not self.ok(f is not None, f"audit: {name} is listed", f"no function {bdf} in the audit"):
                continue
            cls, drv = PCI_DEVICES[dev.driver]
            self.ok(f["class"].startswith(cls) and f["driver"] == drv, f"audit: {name} has class {cls}.. and driver {drv}",
                    f"class {f['class']}, driver {f['driver']}")
            kl = f["kernel_link"]
            if dev.driver == "pcie-root-port":
                cap = root_port_cap(dev)
                self.ok(link(kl["max"]) == cap, f"audit: {name} capable of {fmt(cap)}", f"reported {fmt(link(kl['max']))}")
                child = next((c for c in b.devices if c.props.get("bus") == dev.id), None)
                if child is not None and child.driver not in CONVENTIONAL_PCI:
                    want = min(cap, ENDPOINT_LINK)
                    self.ok(link(kl["current"]) == want, f"audit: {name} runs at {fmt(want)} (its device's capability)",
                            f"reported {fmt(link(kl['current']))}")
                    self.link_entry(d, bdf, addr[key(child)], cap, want)
            elif dev.driver in CONVENTIONAL_PCI or integrated(dev):
                where = "conventional PCI" if dev.driver in CONVENTIONAL_PCI else f"an integrated endpoint on {ROOT_BUS}"
                self.ok(kl["max"] is None and kl["current"] is None, f"audit: {name} has no PCIe link ({where})",
                        f"capable {fmt(link(kl['max']))}, at {fmt(link(kl['current']))}")
            elif dev.driver != "xio3130-downstream":
                # Endpoints and switch upstream ports: 2.5 GT/s x1 capable and running. (QEMU's
                # xio3130-downstream leaves LnkCap's speed 0: no capability to expect.)
                self.ok(link(kl["max"]) == ENDPOINT_LINK and link(kl["current"]) == ENDPOINT_LINK,
                        f"audit: {name} capable of and at {fmt(ENDPOINT_LINK)}",
                        f"capable {fmt(link(kl['max']))}, at {fmt(link(kl['current']))}")
        self.aer(d, addr)
        self.usb(d)
        for nic in b.nics():
            if nic.driver == "e1000e":
                i = next((i for i in d["net"]["interfaces"] if (i.get("attachment") or {}).get("address") == addr.get(key(nic))), None)
                self.ok(i is not None and i["driver"] == "e1000e" and i["speed_mbits_per_sec"] == 1000,
                        f"audit: the e1000e at {addr.get(key(nic))} is an interface at 1000 Mb/s",
                        f"found {i and (i['name'], i['driver'], i['speed_mbits_per_sec'])}")

    def link_entry(self, d, up, down, cap, want):
        e = next((l for l in d["pci"]["links"] if l["upstream"] == up and l["downstream"] == down), None)
        if not self.ok(e is not None, f"audit: link {up} -> {down} listed", "missing from pci.links"):
            return
        c = e["comparison"]
        self.ok(link(c["upstream"]) == cap and link(c["current"]) == want and link(c["downstream"]) == ENDPOINT_LINK,
                f"audit: link {up} -> {down}: upstream capable {fmt(cap)}, downstream {fmt(ENDPOINT_LINK)}, at {fmt(want)}",
                f"upstream {fmt(link(c['upstream']))}, downstream {fmt(link(c['downstream']))}, at {fmt(link(c['current']))}")
        if cap > ENDPOINT_LINK:
            self.ok(not any(e["downgraded"].values()), f"audit: link {up} -> {down} not called downgraded (the endpoint's own limit)",
                    f"downgraded {e['downgraded']}")

    def aer(self, d, addr):
        for command, line in self.b.monitor:
            words = command.split()
            if not words or words[0] != "pcie_aer_inject_error":
                continue
            args = [w for w in words[1:] if not w.startswith("-")]
            dev_id, error = args[0], args[1] if len(args) > 1 else ""
            bdf = addr.get(dev_id)
            kind = "correctable" if "-c" in words or error in AER_CORRECTABLE else "uncorrectable"
            hit = [f for f in d["findings"] if f.get("subject") == bdf and "AER" in f["message"]]
            self.ok(hit, f"audit: the injected {kind} AER error ({error}) is a finding on {dev_id} ({bdf})",
                    f"findings on {bdf}: {[f['message'] for f in d['findings'] if f.get('subject') == bdf]}")

    def usb(self, d):
        """Each USB disk: speed, transport and driver as the board built it, and the finding a
        user needs (BOT on SuperSpeed: no queued commands; a USB 2.0 disk held at 12 Mb/s)."""
        blocks = {x["name"]: x for x in d["block"]["devices"]}
        usb = {u["name"]: u for u in d["usb"]["devices"]}
        for dev, drive in self.b.disks():
            carrier = dev
            if dev.driver == "scsi-hd":
                carrier = self.b.by_id.get(dev.props.get("bus", "").split(".")[0])
            if carrier is None or carrier.driver not in USB_TRANSPORT:
                continue
            serial = self.serials[drive]
            name = self.r.disks.get(serial)
            blk = blocks.get(name)
            what = f"{carrier.driver} disk {serial} ({name})"
            if not self.ok(blk and blk["bus_path"] and blk["bus_path"][0].get("hop") == "usb",
                           f"audit: {what} is a block device on USB", f"block device {name!r} not found on USB"):
                continue
            u = usb.get(blk["bus_path"][0]["name"])
            ctrl, speed = usb_controller_and_speed(self.b, carrier)
            transport, driver = USB_TRANSPORT[carrier.driver]
            st = (u or {}).get("storage") or {}
            self.ok(u and u["speed_mbits_per_sec"] == speed and st.get("transport") == transport and st.get("driver") == driver,
                    f"audit: {what} at {speed:g} Mb/s, {transport} on {driver}",
                    f"found {u and u['speed_mbits_per_sec']} Mb/s, {st.get('transport')} on {st.get('driver')}")
            label = (u or {}).get("name")
            # Findings name a USB device as `USB 2-1` (model::inventory::usb::UsbDevice::label).
            mine = [f["message"] for f in d["findings"] if f.get("subject") == f"USB {label}"]
            if transport == "bulk_only" and speed >= 5000:
                self.ok(any("UAS" in m for m in mine), f"audit: {what}: a finding says it runs without UAS",
                        f"findings on {label}: {mine}")
            if USB_DEVICE_MAX[carrier.driver] > speed and speed <= 12:
                self.ok(any(f"{speed:g} Mb/s" in m for m in mine), f"audit: {what}: a finding says it is held at {speed:g} Mb/s",
                        f"findings on {label}: {mine}")
            if transport == "uas":
                self.ok(not any("Bulk-Only" in m or "UAS" in m for m in mine), f"audit: {what}: no transport finding on UAS",
                        f"findings on {label}: {mine}")

    # --- paths
    def paths(self):
        b = self.b
        addr = pci_addresses(b)
        for dev, drive in b.disks():
            serial = self.serials[drive]
            d = self.doc(f"path-{serial}", "path")
            carrier = dev if dev.driver != "scsi-hd" else b.by_id.get(dev.props.get("bus", "").split(".")[0])
            if d is None or carrier is None:
                continue
            pci_dev = carrier if carrier.driver in PCI_DEVICES else b.by_id.get(carrier.props.get("bus", "").split(".")[0])
            self.path_ends(d, f"path of {carrier.driver} disk {serial}", pci_dev, addr)
            if carrier.driver in USB_TRANSPORT:
                _, speed = usb_controller_and_speed(b, carrier)
                usb_links = [l for l in d["path"]["links"] if l["kind"] == "usb"]
                self.ok(usb_links and min(usb_speed(l) for l in usb_links) == speed,
                        f"path of {carrier.driver} disk {serial}: its slowest USB link is {speed:g} Mb/s",
                        f"USB links {[l['state'] for l in usb_links]}")
                if speed <= 12:
                    bn = bottleneck(d)
                    self.ok(bn and bn["kind"] == "usb" and usb_speed(bn) == speed,
                            f"path of {carrier.driver} disk {serial}: the {speed:g} Mb/s USB link is the bottleneck",
                            f"bottleneck {bn and bn['name']}")
        for drive in b.ext4:
            dev = next(d for d, dr in b.disks() if dr == drive)
            d = self.doc("path-file", "path")
            if d is None:
                continue
            self.path_ends(d, f"path of a file on {drive}'s ext4", dev, addr)
            if integrated(dev):
                pcie = [l["name"] for l in d["path"]["links"] if l["kind"] == "pcie"]
                self.ok(not pcie, f"path of a file on {drive}'s ext4: no PCIe link (an integrated endpoint on {ROOT_BUS})",
                        f"PCIe links {pcie}")
                continue
            rp = root_port_of(b, dev)
            bn = bottleneck(d)
            want = min(root_port_cap(rp), ENDPOINT_LINK) if rp else ENDPOINT_LINK
            self.ok(bn and bn["kind"] == "pcie" and bn["state"] == fmt(want) and bn["hop"] == addr.get(key(dev)),
                    f"path of a file on {drive}'s ext4: bottleneck the {fmt(want)} link of {addr.get(key(dev))}",
                    f"bottleneck {bn and (bn['name'], bn['state'])}")
        for nic in b.nics():
            if "net" not in b.steps:
                break
            d = self.doc("path-nic", "path")
            if d is not None:
                self.path_ends(d, f"path of {self.r.nic} ({nic.driver})", nic, addr)
            break

    def path_ends(self, d, what, pci_dev, addr):
        """The chain's PCI hops are the board's, from the device to its root port."""
        want = [addr[k] for k in pci_chain(self.b, pci_dev)] if pci_dev else []
        got = [h["address"] for h in d["path"]["chain"]["hops"] if h["hop"] == "pci"]
        self.ok(got == want, f"{what}: ends {' -> '.join(want)} -> CPU", f"PCI hops {got}")

    # --- benchmarks
    def engine(self, name):
        d = self.doc(name, "disk")
        if d is None:
            return
        p = d["parameters"]
        self.ok(p["engine"] == "io_uring" and p["direct"], f"{name}: io_uring with O_DIRECT on the board's kernel",
                f"engine {p['engine']}, direct {p['direct']}; notes: {d.get('notes')}")
        runs = [r for t in d.get("tests", []) for r in t.get("runs", [])]
        self.ok(runs and all(r.get("mb_per_s", 0) > 0 for r in runs), f"{name}: every run moved data", f"runs {runs[:1]}")

    def latency(self):
        d = self.doc("latency", "latency")
        if d is None:
            return
        fifo = d["measurement"]["privileges"]["sched_fifo"]
        self.ok(fifo["state"] == "done", "latency: SCHED_FIFO priority 99 granted", f"{fifo}")
        self.ok(all(t["stats"]["count"] > 0 for t in d["measurement"]["threads"]), "latency: every thread measured")

    def count(self):
        d = self.doc("count-list", "pmu_list")
        if d is not None:
            self.ok(any(p["name"] == "software" for p in d["pmus"]), "count --list: lists the kernel's PMUs",
                    f"{[p['name'] for p in d['pmus']]}")
        if self.b.arch == "aarch64":
            d = self.doc("count-cycles", "count")
            if d is not None:
                ev = [e for e in d.get("events", []) if e["name"] == "cycles"]
                self.ok(ev and ev[0]["status"] == "counted" and (ev[0]["value"] or 0) > 0,
                        "count -e cycles -- true: the CPU PMU counted cycles", f"events {ev}")

    def survey(self):
        d = self.doc("survey", "survey")
        if d is None:
            return
        # A budget is a promise (the aarch64 board's 60 s survey took 81 s before the parts
        # still to run were fitted into what was left): the parts' wall time, from the first
        # one's start to the last one's end, within the budget the survey was given.
        # A part stopped at the budget's end then takes a moment to keep what it measured
        # (with --split, matching and explaining its wake-ups: seconds under TCG); the
        # document says how long (`stopping_s`), and that is the only time allowed past it.
        budget, took = d.get("plan", {}).get("budget_s"), d.get("seconds")
        stopping = sum(p.get("stopping_s") or 0 for p in d.get("parts", []))
        self.ok(isinstance(took, (int, float)) and budget is not None
                and took <= budget + stopping + 0.1,
                f"survey: took {took} s of its {budget} s budget"
                + (f", {stopping} s of it stopping the part running at its end" if stopping else ""),
                "; ".join(f"{p['id']} {p.get('status')} {p.get('seconds')} s (planned {p.get('planned_s')})"
                          for p in d.get("parts", []) if p.get("seconds") is not None))
        src = os.path.join(self.workdir, "out", "survey.json")
        html = os.path.join(self.workdir, "survey.html")
        p = subprocess.run([self.host_bin, "report", "--html", html, src], capture_output=True, text=True, timeout=120)
        body = open(html, encoding="utf-8", errors="replace").read() if os.path.exists(html) else ""
        self.ok(p.returncode == 0 and "<html" in body and "</html>" in body,
                "survey: renders with `report --html` on the host", f"exit {p.returncode}: {p.stderr.strip()[-300:]}")

    def net(self):
        if not self.r.nic:
            self.ok(False, "net: the board has its NIC up", "no interface found")
            return
        for client in ("headroom", "iperf3"):
            rc, stdout, stderr = self.r.host.get(f"net-host-client-{client}", (None, "", "not run"))
            moved = 0
            try:
                j = json.loads(stdout)
                moved = net_bytes(j) if client == "headroom" else j["end"]["sum_received"]["bytes"]
            except (ValueError, KeyError, TypeError):
                pass
            self.ok(rc == 0 and moved > 0, f"net: host {client} client -> board's headroom server moved data",
                    f"exit {rc}, {stderr.strip()[-200:]}")
            d = self.doc(f"net-server-{client}", "net")
            if d is not None:
                self.ok(net_bytes(d) > 0, f"net: board's headroom server served host {client}")
        d = self.doc("net-client-headroom", "net")
        if d is not None:
            self.ok(net_bytes(d) > 0, "net: board's headroom client -> host headroom server moved data")
        d = self.doc("net-client-iperf3", "net")
        if d is not None:
            self.ok(net_bytes(d) > 0, "net: board's headroom client -R <- host iperf3 server moved data")
        for server in ("headroom", "iperf3"):
            rc, stdout, stderr = self.r.host.get(f"net-host-server-{server}", (None, "", "not run"))
            self.ok(rc == 0, f"net: host {server} server ended cleanly", f"exit {rc}, {stderr.strip()[-200:]}")

    # --- video: vivid's webcam, by what vivid and V4L2 document
    def video(self):
        for name, code, w, h, fps, frames in VIDEO_RUNS:
            d = self.doc(name, "video")
            if d is None:
                continue
            n, c = d.get("negotiated") or {}, d.get("capture") or {}
            dev = d.get("device", {})
            self.ok((dev.get("caps") or {}).get("driver") == "vivid" and dev.get("bus") == "platform",
                    f"{name}: captured from vivid, a platform device", f"device {dev}")
            got = (n.get("fourcc"), (n.get("size") or {}).get("width"), (n.get("size") or {}).get("height"), n.get("fps"))
            self.ok(got == (fourcc(code), w, h, {"num": fps, "den": 1}),
                    f"{name}: vivid set {code} {w}x{h} at {fps} fps as asked", f"negotiated {n}")
            frame = w * h * BYTES_PER_PIXEL[code]
            self.ok(n.get("bytesperline") == w * BYTES_PER_PIXEL[code] and n.get("sizeimage") == frame,
                    f"{name}: {w * BYTES_PER_PIXEL[code]} B per line, {frame} B per frame", f"negotiated {n}")
            self.ok(c.get("frames") == frames and c.get("bytes") == frames * frame,
                    f"{name}: {frames} full frames captured", f"frames {c.get('frames')}, bytes {c.get('bytes')}")
            self.ok(c.get("clock") == "monotonic", f"{name}: frame times are the driver's monotonic timestamps",
                    f"clock {c.get('clock')}")
            first, last, dropped = c.get("first_sequence"), c.get("last_sequence"), c.get("dropped")
            self.ok(first is not None and last is not None and last - first + 1 == frames + dropped,
                    f"{name}: frames and drops account for every sequence number",
                    f"sequence {first}..{last}, {c.get('frames')} frames, {dropped} dropped")
            rate = c.get("fps")
            made = rate * (frames + dropped) / frames if rate and dropped is not None else None
            self.ok(made is not None and abs(made / fps - 1) <= VIDEO_RATE_TOLERANCE,
                    f"{name}: vivid made frames at {fps} fps (delivered {rate and round(rate, 2)} fps, {dropped} dropped)",
                    f"rate {made}")
        d = self.doc("video-formats", "video")
        if d is not None:
            fmts = {f["fourcc"]: f for f in d["device"].get("formats", [])}
            self.ok(all(fourcc(code) in fmts for code in BYTES_PER_PIXEL),
                    "video --list-formats: vivid offers YUYV and RGB3", f"formats {sorted(fmts)}")
            sizes = [s for s in fmts.get(fourcc("YUYV"), {}).get("sizes", []) if s.get("type") == "discrete"]
            want = [((sw, sh), VIVID_WEBCAM_INTERVALS[: 2 * (len(VIVID_WEBCAM_SIZES) - i)])
                    for i, (sw, sh) in enumerate(VIVID_WEBCAM_SIZES)]
            got = [((s["size"]["width"], s["size"]["height"]), [(iv["num"], iv["den"]) for iv in s["intervals"]])
                   for s in sizes]
            self.ok(got == want, "video --list-formats: YUYV's sizes and frame intervals are vivid's webcam's",
                    f"got {got}")
        if self.r.files.get("video-vs-v4l2-ctl.json") is not None:
            d = self.doc("video-vs-v4l2-ctl", "vs-v4l2-ctl")
            if d is not None:
                rounds = d.get("rounds", [])
                self.ok(rounds and all(r["headroom_fps"] and r["v4l2_ctl_fps"] for r in rounds),
                        f"video vs v4l2-ctl: both captured in each of {len(rounds)} rounds", f"rounds {rounds}")
                ratio = d.get("ratio")
                self.ok(ratio is not None and abs(ratio - 1) <= 0.01,
                        f"video vs v4l2-ctl: headroom's fps within 1 % of v4l2-ctl --stream-mmap's "
                        f"(median {d.get('headroom_median_fps')} / {d.get('v4l2_ctl_median_fps')} fps)",
                        f"ratio {ratio}")
        else:
            self.ok(False, "video vs v4l2-ctl: ran in the board", "no v4l2-ctl in the image")
        d = self.doc("path-video", "path")
        if d is not None:
            hops = d["path"]["chain"]["hops"]
            kinds = [(h["hop"], h.get("name")) for h in hops]
            self.ok(kinds[:2] == [("video", "video0"), ("platform", "vivid.0")] and kinds[-1][0] == "cpu",
                    "path /dev/video0: vivid's node on its platform device, then the CPU", f"hops {kinds}")


    # --- the host acting while a step runs
    def host_acted(self, step):
        """Every `during STEP:` command was taken: QEMU's monitor answered without an error, the
        guest wrote every aer_inject record."""
        for command, _ in self.b.during.get(step, []):
            rc, reply, _ = self.r.host.get(f"during {step}: {command}", (None, "not sent", ""))
            bad = rc != 0 or any(w in reply for w in ("Error", "error:", "invalid", "not found", "failed"))
            self.ok(not bad, f"{step}: `{command}` taken", f"{reply.strip()[-200:]}")

    def watch(self):
        """`headroom watch` while the host injected AER errors and removed and added a device:
        each error counted exactly, by name and severity, on the function it was injected at,
        none on another; the device seen leaving and arriving, its link down and up."""
        self.host_acted("watch")
        # Stopped by SIGINT as by Ctrl-C: exit 130, the document of the watch until then.
        d = self.doc("watch", "watch", rc_ok=130)
        if d is None:
            return
        self.ok(d.get("interrupted") is True, "watch: stopped by SIGINT, says so in its document")
        want, at, unknown = injected(self.b, "watch")
        for command in unknown:
            self.ok(False, f"watch: `{command}`: the lab predicts the counts of QEMU's named errors only")
        got = counted(d["devices"])
        for bdf in sorted(at):
            mine = {k: v for k, v in want.items() if k[0] == bdf}
            seen = {k: v for k, v in got.items() if k[0] == bdf}
            self.ok(seen == mine, f"watch: {bdf} counted " + (", ".join(f"{v} {s} {n}" for (_, s, n), v in sorted(mine.items()))
                                                              or "none (what QEMU's monitor injected there reaches no kernel)"),
                    f"counted {', '.join(f'{v} {s} {n}' for (_, s, n), v in sorted(seen.items())) or 'none'}")
        others = {k: v for k, v in got.items() if k[0] not in at}
        self.ok(not others, "watch: no AER error counted on a function nothing was injected at",
                f"counted {others}")
        addr = pci_addresses(self.b)
        summary = {x["device"]: x for x in d["devices"]}
        changes = d.get("changes", [])
        for dev_id, rp_id in replugged(self.b, "watch"):
            bdf = addr.get(dev_id)
            s = summary.get(bdf, {})
            mine = [c for c in changes if c["device"] == bdf]
            kinds = [c["type"] for c in mine]
            self.ok(s.get("departures", 0) >= 1 and s.get("arrivals", 0) >= 1 and "pci_left" in kinds
                    and "pci_arrived" in kinds[kinds.index("pci_left"):],
                    f"watch: {dev_id} ({bdf}) on {rp_id} seen leaving, then arriving again",
                    f"departures {s.get('departures')}, arrivals {s.get('arrivals')}, changes {kinds}")
            # Its link as the function sees it: gone with it, back at the endpoint's 2.5 GT/s
            # x1. (QEMU 7.2 leaves the root port's own Link Status as it was when its slot
            # empties, so the port's side shows no change.)
            back = [c.get("link") for c in mine if c["type"] == "pci_arrived"]
            self.ok(s.get("link_downs", 0) >= 1 and back and link(back[-1]) == ENDPOINT_LINK,
                    f"watch: {dev_id}'s link seen going down with it and up again at {fmt(ENDPOINT_LINK)}",
                    f"link downs {s.get('link_downs')}, arrived with {[fmt(link(l)) for l in back]}")

    def watch_disk(self):
        """`bench disk` on the ext4 while the host injected AER errors at its path's root port:
        the document's link watch counts them exactly and a finding gives errors per GB."""
        self.host_acted("watch-disk")
        d = self.doc("watch-disk", "disk")
        if d is None:
            return
        links = (d.get("counters") or {}).get("links")
        if not self.ok(links, "watch-disk: the document has the path's link watch", "no counters.links"):
            return
        want, _, unknown = injected(self.b, "watch-disk")
        for command in unknown:
            self.ok(False, f"watch-disk: `{command}`: the lab predicts the counts of QEMU's named errors only")
        got = counted(links["devices"])
        self.ok(got == want, "watch-disk: the link watch counted " + ", ".join(f"{v} {s} {n} on {b}" for (b, s, n), v in sorted(want.items())),
                f"counted {', '.join(f'{v} {s} {n} on {b}' for (b, s, n), v in sorted(got.items())) or 'none'}")
        # The findings of the path's watch are the report's (made when the document is read):
        # `headroom report` on the host says them.
        src = os.path.join(self.workdir, "out", "watch-disk.json")
        p = subprocess.run([self.host_bin, "report", "--color", "never", src], capture_output=True, text=True, timeout=120)
        moved = links.get("read_bytes", 0) + links.get("write_bytes", 0)
        for bdf in sorted({k[0] for k in want}):
            n = sum(v for k, v in want.items() if k[0] == bdf)
            per_gb = f"{n / (moved / 1e9):.2f} per GB" if moved else "no bytes moved"
            said = [l.strip() for l in p.stdout.splitlines() if f"on {bdf} during" in l]
            self.ok(p.returncode == 0 and any(per_gb in l for l in said),
                    f"watch-disk: `report` gives {bdf}'s {n} errors as {per_gb} of the {moved} B written",
                    f"exit {p.returncode}, its lines on {bdf}: {said} {p.stderr.strip()[-200:]}")
    # --- gadget: dummy_hcd's device controller and the configfs gadget lab/guest/init made
    def gadget(self):
        d = self.doc("gadget-audit", "audit")
        lun_file = "/mnt/ext4/lun0.img" if self.b.ext4 else "/tmp/lun0.img"
        if d is not None:
            side = d["usb"].get("device_side", {})
            udcs = [c for c in side.get("controllers", []) if c["name"].startswith("dummy_udc")]
            udc = udcs[0] if udcs else {}
            self.ok(udc.get("state") == "configured" and udc.get("current_speed") == "high-speed"
                    and udc.get("gadget") == GADGET_NAME,
                    f"gadget: audit shows UDC dummy_udc configured at high-speed with gadget {GADGET_NAME}",
                    f"controllers {side.get('controllers')}")
            g = next((g for g in side.get("gadgets", []) if g["name"] == GADGET_NAME), {})
            funcs = {f["name"]: f["kind"] for f in g.get("functions", [])}
            luns = funcs.get("mass_storage.0", {}).get("mass_storage", {}).get("luns", [])
            self.ok(any(l.get("file") == lun_file for l in luns),
                    f"gadget: audit shows mass_storage.0's LUN backed by {lun_file}", f"luns {luns}")
            hid = funcs.get("hid.usb0", {}).get("hid", {}).get("reserved") or {}
            self.ok(abs(hid.get("bytes_per_sec", 0) - HID_REPORT * HS_HID_REPORTS_PER_S) < 1e-6,
                    f"gadget: the HID function's ceiling is {HS_HID_REPORTS_PER_S:.0f} reports/s of {HID_REPORT} B",
                    f"reserved {hid}")
            host = [u for u in d["usb"]["devices"] if u.get("vendor_id") == GADGET_VID
                    and u.get("product_id") == GADGET_PID and not u["root_hub"]]
            dev = host[0] if host else {}
            self.ok(dev.get("speed_mbits_per_sec") == 480.0,
                    "gadget: the host side sees the gadget as a USB 2.0 high-speed device (480 Mb/s)",
                    f"devices {[(u['name'], u.get('speed_mbits_per_sec')) for u in host]}")
            classes = {i.get("class") for i in dev.get("interfaces", [])}
            self.ok({0x08, 0x02, 0x03} <= classes,
                    "gadget: its interfaces are mass storage, communications (NCM) and HID",
                    f"classes {sorted(c for c in classes if c is not None)}")
        p = self.doc("gadget-path-disk", "path")
        if p is not None:
            hops = json.dumps(p["path"]["chain"]["hops"])
            self.ok("dummy_hcd" in hops, "gadget: path of the host side's disk names the dummy_hcd chain",
                    "no dummy_hcd in its hops")
            bn = bottleneck(p)
            self.ok(bn is not None and usb_speed(bn) == 480.0
                    and abs(bn["ceiling_bytes_per_sec"] - USB2_HS_BULK) < 1,
                    f"gadget: the disk's bottleneck is its 480 Mb/s USB link at {USB2_HS_BULK / 1e6:.3f} MB/s",
                    f"bottleneck {bn and (bn['name'], bn['state'], bn['ceiling_bytes_per_sec'])}")
        p = self.doc("gadget-path-lun", "path")
        if p is not None:
            backs = p["path"].get("backs_gadget_luns", [])
            self.ok(any(l["gadget"] == GADGET_NAME and abs((l.get("usb_bulk_ceiling_bps") or 0) - USB2_HS_BULK) < 1
                        for l in backs),
                    f"gadget: path of {lun_file} says it backs the gadget's LUN, USB ceiling {USB2_HS_BULK / 1e6:.3f} MB/s",
                    f"backs {backs}")
        d = self.doc("gadget-disk", "disk")
        if d is not None:
            c = (d.get("ceiling") or {}).get("read_bytes_per_sec")
            self.ok(c is not None and abs(c - USB2_HS_BULK) < 1,
                    f"gadget: bench disk on the gadget's disk is judged against the USB 2.0 bulk ceiling {USB2_HS_BULK / 1e6:.3f} MB/s",
                    f"ceiling {d.get('ceiling')}")
        d = self.doc("gadget-net", "net")
        if d is not None:
            c = (d.get("ceiling") or {}).get("goodput_bytes_per_sec")
            self.ok(net_bytes(d) > 0, "gadget: bench net moved data from the host side to the gadget's NCM interface")
            self.ok(c is not None and 0 < c <= USB2_HS_BULK + 1,
                    f"gadget: bench net over NCM is judged against a ceiling within the USB 2.0 bulk {USB2_HS_BULK / 1e6:.3f} MB/s",
                    f"ceiling {d.get('ceiling')}, no_ceiling_reason {d.get('no_ceiling_reason')}")


def net_bytes(d):
    return sum(s["local"]["bytes"] for s in d["measurement"]["streams"])


def usb_speed(l):
    m = re.search(r"([\d.]+) ?Mb/s", l["state"] or "")
    return float(m.group(1)) if m else None


def bottleneck(d):
    i = d["path"].get("bottleneck")
    return d["path"]["links"][i] if i is not None else None


def check(board, result, serials, workdir, host_bin):
    """[(holds, what)] for one board's result."""
    return Checks(board, result, serials, workdir, host_bin).run()
