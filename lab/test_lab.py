"""The lab's own pure parts, offline: board files and the checker's predictions, the latter
against the sysfs tree captured inside the x86_64 board (tests/fixtures/sysfs/qemu-q35-lab).

    python3 -m unittest discover -s lab
"""

import base64
import glob
import gzip
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import board as board_module
from board import Board, BoardError, shell_conf
import boot
import checks
import history

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CAPTURED = os.path.join(REPO, "tests", "fixtures", "sysfs", "qemu-q35-lab", "sys", "bus", "pci", "devices")
# Vendor:device of QEMU 7.2's models (include/hw/pci/pci_ids.h), to tell them apart in the tree.
HEADROOM = os.path.join(REPO, "target", "debug", "headroom")
IDS = {"pcie-root-port": "1b36:000c", "nvme": "1b36:0010", "qemu-xhci": "1b36:000d",
       "x3130-upstream": "104c:8232", "xio3130-downstream": "104c:8233", "e1000e": "8086:10d3"}


def board_text(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".board", delete=False)
    f.write(text)
    f.close()
    return f.name


class Boards(unittest.TestCase):
    def test_every_board_in_the_repo_parses_and_runs_every_default_step(self):
        for path in glob.glob(os.path.join(HERE, "boards", "*.board")):
            b = Board(path)
            acting = ["watch", "watch-disk"] if b.during else []
            self.assertEqual(b.steps, ["audit", "path", "disk", "raw", "latency", "count", "survey", "net", "video"] + acting + ["gadget"], path)

    def test_during_lines_are_kept_in_order_per_step_and_checked(self):
        path = board_text("arch: x86_64\n-device pcie-root-port,id=rp1\n-drive file=a,if=none,id=d\n"
                          "-device nvme,bus=rp1,drive=d,serial=n\next4: d\n"
                          "during watch: pcie_aer_inject_error rp1 MALF_TLP\nduring watch-disk: aer_inject rp1 RCVR\n"
                          "during watch: device_del x  # a comment\n")
        b = Board(path)
        os.unlink(path)
        self.assertEqual(b.during, {"watch": [("pcie_aer_inject_error rp1 MALF_TLP", 6), ("device_del x", 8)],
                                    "watch-disk": [("aer_inject rp1 RCVR", 7)]})
        self.assertEqual(b.steps[-3:], ["watch", "watch-disk", "gadget"])
        for text, words in [
            ("arch: x86_64\nduring bench: device_del x\n", ":2: `during bench:` names no step"),
            ("arch: x86_64\nduring watch:\n", ":2: `during watch:` needs a command"),
            ("arch: x86_64\n-device pcie-root-port,id=rp1\nduring watch: aer_inject rp1 RECEIVER\n",
             ":3: `aer_inject DEVICE ERROR` takes a device id and one of QEMU's error names"),
            ("arch: x86_64\nduring watch: aer_inject rp9 RCVR\n", ":2: aer_inject rp9: no -device has id=rp9"),
        ]:
            path = board_text(text)
            with self.assertRaises(BoardError) as e:
                Board(path)
            self.assertIn(words, str(e.exception))
            os.unlink(path)

    def test_an_aer_inject_record_is_the_kernels_struct_as_busybox_printf_writes_it(self):
        from board import aer_inject_record
        escapes = aer_inject_record("0000:04:00.0", "BAD_DLLP")
        data = bytes(int(o, 8) for o in escapes.split("\\")[1:])
        # struct aer_error_inj: u8 bus, dev, fn (+1 pad); u32 uncor_status, cor_status,
        # header_log0..3, domain.
        self.assertEqual(struct.unpack("<BBBxIIIIIII", data), (4, 0, 0, 0, 1 << 7, 0, 0, 0, 0, 0))
        self.assertEqual(struct.unpack("<BBBxII", bytes(int(o, 8) for o in aer_inject_record(
            "0000:00:13.0", "ECRC").split("\\")[1:])[:12]), (0, 0x13, 0, 1 << 19, 0))
        busybox = sorted(glob.glob(os.path.join(REPO, "target", "lab", "cache", "busybox-static_*_amd64", "bin", "busybox")))
        if busybox and os.uname().machine == "x86_64":
            out = subprocess.run([busybox[-1], "printf", escapes], capture_output=True, check=True).stdout
            self.assertEqual(out, data)

    def test_a_bad_line_is_named_with_its_number(self):
        for text, words in [
            ("arch: x86_64\nextfour: d\n", ":2: unknown key 'extfour'"),
            ("arch: riscv\n", ":1: arch 'riscv'"),
            ("-machine q35\n", "no `arch:` line"),
            ("arch: x86_64\n-drive file=a,if=none,id=d\n\nraw: e\n", ":4: 'e' is no -drive's id"),
            ("arch: x86_64\nrun: audit bench\n", ":2: unknown step bench"),
            ("arch: x86_64\n-drive file=a,if=none,id=d\n-drive file=b,if=none,id=e\next4: d e\n", ":4: one ext4: drive"),
        ]:
            path = board_text(text)
            with self.assertRaises(BoardError) as e:
                Board(path)
            self.assertIn(words, str(e.exception))
            os.unlink(path)

    def test_comments_and_qemu_commas(self):
        path = board_text("# a board\narch: armv7  # 32-bit\n-device nvme,id=n,serial=a,,b  # escaped comma\n")
        b = Board(path)
        os.unlink(path)
        self.assertEqual(b.arch, "armv7")
        self.assertEqual(b.devices[0].props, {"id": "n", "serial": "a,b"})
        self.assertEqual(b.steps, ["audit", "path", "latency", "count", "survey", "video", "gadget"])


    def test_a_serial_or_an_id_cannot_carry_shell_syntax(self):
        for text, words in [
            ("arch: x86_64\n-device nvme,id=n,serial=$(reboot)\n", ":2: serial='$(reboot)'"),
            ("arch: x86_64\n-device usb-storage,drive=d,serial=a;reboot\n", ":2: serial='a;reboot'"),
            ("arch: x86_64\n-device nvme,serial=" + "x" * 21 + "\n", ":2: serial="),
            ("arch: x86_64\n-drive file=a,if=none,id=d$x\n", ":2: id='d$x' is not a QEMU identifier"),
            ("arch: x86_64\n-device nvme,serial='a\n", ":2: no closing quotation"),
        ]:
            path = board_text(text)
            with self.assertRaises(BoardError) as e:
                Board(path)
            os.unlink(path)
            self.assertIn(words, str(e.exception))

    def test_the_guest_conf_holds_values_never_code(self):
        # /lab/conf is sourced by the guest's /init: a value with quotes and a command
        # substitution stays the value.
        value = "a' b $(touch pwned) `id` \"c\""
        with tempfile.TemporaryDirectory() as d:
            conf = os.path.join(d, "conf")
            with open(conf, "w") as f:
                f.write(shell_conf({"LAB_DISKS": value, "LAB_RAW": ""}))
            out = subprocess.run(["sh", "-c", '. ./conf; printf %s "$LAB_DISKS"'], cwd=d,
                                 capture_output=True, text=True, check=True).stdout
            self.assertEqual(out, value)
            self.assertEqual(os.listdir(d), ["conf"])

    def test_a_board_of_devices_only_boots_on_the_standard_machine(self):
        for arch, machine, cpu in [("x86_64", "q35", "max"), ("aarch64", "virt", "max,pmu=on,pauth-impdef=on"),
                                   ("armv7", "virt,highmem=off", "cortex-a15")]:
            path = board_text(f"arch: {arch}\n-device pcie-root-port,id=rp1,bus=pcie.0,addr=0x10\n")
            b = Board(path)
            os.unlink(path)
            cmd = boot.qemu_command(b, "vmlinuz", "initrd", "mon.sock", {}, None, "tcg")
            for opt, value in [("-machine", machine), ("-cpu", cpu), ("-smp", "2"), ("-m", "1024")]:
                self.assertEqual(cmd[cmd.index(opt) + 1], value, (arch, opt))
            self.assertEqual(b.machine, machine.split(",")[0])
        # The board's own choice stays, and a machine the checker does not know is refused.
        path = board_text("arch: x86_64\n-m 2048\n")
        cmd = boot.qemu_command(Board(path), "k", "i", "m", {}, None, "tcg")
        os.unlink(path)
        self.assertEqual(cmd.count("-m"), 1)
        self.assertEqual(cmd[cmd.index("-m") + 1], "2048")
        path = board_text("arch: aarch64\n-M virt-7.2\n")
        cmd = boot.qemu_command(Board(path), "k", "i", "m", {}, None, "tcg")
        os.unlink(path)
        self.assertEqual(cmd[cmd.index("-machine") + 1:].count("-machine"), 0)
        self.assertEqual(cmd[cmd.index("-machine") + 1], "virt-7.2")
        path = board_text("arch: x86_64\n-machine pc\n")
        with self.assertRaises(BoardError) as e:
            Board(path)
        os.unlink(path)
        self.assertIn(":2: -machine pc: the lab checks x86_64 boards on QEMU's q35 machine", str(e.exception))


def sent(name, data):
    """What the guest's /init prints to send NAME (lab/guest/init, send())."""
    text = base64.b64encode(gzip.compress(data)).decode()
    return [f"@@LAB file {name} {len(data)}"] + [text[i:i + 76] for i in range(0, len(text), 76)] + [f"@@LAB end {name}"]


def fake_guest(lines):
    """A stand-in for QEMU that prints LINES on its console and ends, as a guest would."""
    return [sys.executable, "-c", "import sys; sys.stdout.write(" + repr("\n".join(lines) + "\n") + ")"]


# The smallest bzImage header QEMU's x86 loader takes (arch/x86/boot/header.S: setup_sects,
# boot_flag 0xAA55, "HdrS", protocol 2.15, LOADED_HIGH, initrd_addr_max): enough for QEMU to go
# on to create the board's devices, where a board is refused.
def fake_bzimage(path):
    b = bytearray(64 * 1024)
    b[0x1F1] = 4
    b[0x1FE:0x200] = b"\x55\xaa"
    b[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", b, 0x206, 0x020F)
    b[0x211] = 0x01
    struct.pack_into("<I", b, 0x22C, 0x7FFFFFFF)
    with open(path, "wb") as f:
        f.write(b)


class Boot(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.workdir = os.path.join(self.dir, "board")
        os.makedirs(self.workdir)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def board(self, text):
        path = os.path.join(self.dir, "b.board")
        with open(path, "w") as f:
            f.write(text)
        return Board(path)

    def test_a_guest_file_too_large_as_sent_or_inflated_is_dropped_with_a_warning(self):
        bomb = sent("bomb.json", bytes(4096))  # 4 KiB of zeros: about 40 B as sent
        long = sent("long.json", os.urandom(3000))  # incompressible: about 4 kB as sent
        lines = (["@@LAB boot 6.1.0 x86_64"] + bomb + long + sent("audit.json", b"{}")
                 + ["@@LAB done"])
        b = self.board("arch: x86_64\n")
        with mock.patch.object(boot, "qemu_command", return_value=fake_guest(lines)), \
                mock.patch.object(boot, "MAX_FILE_BYTES", 2048):
            r = boot.boot(b, "k", "i", self.workdir, HEADROOM, "tcg", log=lambda *a: None)
        self.assertTrue(r.done, r.error)
        self.assertEqual(sorted(r.files), ["audit.json"])
        said = " ".join(r.warnings)
        self.assertIn("bomb.json came back damaged or too large (it inflates past 2048 B)", said)
        self.assertIn("long.json came back damaged or too large (it is longer than 2048 B as sent)", said)

    def test_a_guest_file_is_written_only_by_a_plain_name_under_out(self):
        outside = os.path.join(self.dir, "absolute.json")
        lines = (["@@LAB boot 6.1.0 x86_64"] + sent("../escaped.json", b"{}") + sent(outside, b"{}")
                 + sent(".hidden", b"{}") + sent("audit.json", b'{"kind": "audit"}') + ["@@LAB done"])
        b = self.board("arch: x86_64\n")
        with mock.patch.object(boot, "qemu_command", return_value=fake_guest(lines)):
            r = boot.boot(b, "k", "i", self.workdir, HEADROOM, "tcg", log=lambda *a: None)
        self.assertTrue(r.done, r.error)
        self.assertEqual(os.listdir(os.path.join(self.workdir, "out")), ["audit.json"])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "escaped.json")))
        self.assertFalse(os.path.exists(outside))
        self.assertEqual(len([w for w in r.warnings if "not a plain file name" in w]), 3, r.warnings)

    def test_the_host_servers_listen_on_the_loopback_only(self):
        if not shutil.which("iperf3") or not os.path.exists(HEADROOM):
            self.skipTest("iperf3 or target/debug/headroom missing")
        hport, iport = boot.free_port(), boot.free_port()
        procs = [boot.start_host(argv) for _, argv in boot.host_servers(HEADROOM, hport, iport)]
        try:
            self.assertTrue(boot.wait_listening([hport, iport], 30))
            # /proc/net/tcp: local address HEX_IP:HEX_PORT, state 0A = LISTEN; 0100007F is
            # 127.0.0.1, 00000000 every interface.
            listening = {}
            for table in ("/proc/net/tcp", "/proc/net/tcp6"):
                with open(table) as f:
                    for line in f.readlines()[1:]:
                        fields = line.split()
                        ip, port = fields[1].rsplit(":", 1)
                        if fields[3] == "0A" and int(port, 16) in (hport, iport):
                            listening.setdefault(int(port, 16), set()).add(ip)
            self.assertEqual(listening, {hport: {"0100007F"}, iport: {"0100007F"}})
        finally:
            for p in procs:
                p.kill()
                p.communicate()

    def test_a_board_qemu_refuses_says_why_and_which_device(self):
        if not shutil.which("qemu-system-x86_64"):
            self.skipTest("qemu-system-x86_64 is not installed")
        # Only devices: q35 by default. A full-speed hub on an EHCI without companions: QEMU
        # prints "Warning: speed mismatch" and does not start.
        b = self.board("arch: x86_64\n-device usb-ehci,id=ehci\n-device usb-hub,id=hub,bus=ehci.0,port=1\n")
        kernel = os.path.join(self.dir, "bzImage")
        fake_bzimage(kernel)
        r = boot.boot(b, kernel, kernel, self.workdir, HEADROOM, "tcg", log=lambda *a: None)
        with open(os.path.join(self.workdir, "qemu.cmd")) as f:
            self.assertIn(" -machine q35 ", f.read())
        self.assertIn("before the guest's /init ran; QEMU said: qemu-system-x86_64: -device usb-hub", r.error)
        self.assertIn('Warning: speed mismatch trying to attach usb device "QEMU USB Hub"', r.error)
        failed = [w for ok, w in checks.check(b, r, {}, self.workdir, HEADROOM) if not ok]
        hub = [w for w in failed if w.startswith("QEMU: usb-hub hub on ehci.0 port 1 attaches: ")]
        self.assertEqual(len(hub), 1, failed)
        self.assertIn("a full-speed device on a high-speed port (an EHCI without companion controllers", hub[0])


def acting_guest(record):
    """A stand-in for QEMU whose guest asks the host to act during its watch step, writes the
    host's answers to RECORD and says `injected` for each aer_inject record, as /init does."""
    code = f"""
import sys
print("@@LAB boot 6.1.0 x86_64", flush=True)
print("@@LAB inject watch", flush=True)
with open({record!r}, "w") as out:
    for line in sys.stdin:
        out.write(line)
        out.flush()
        if line.startswith("aer "):
            print("@@LAB injected", flush=True)
        elif line.strip() == "go":
            break
print("@@LAB done", flush=True)
"""
    return [sys.executable, "-c", code]


class Acting(unittest.TestCase):
    def test_the_host_acts_in_the_board_files_order_while_the_step_runs(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        workdir, record = os.path.join(d, "board"), os.path.join(d, "answers")
        os.makedirs(workdir)
        path = os.path.join(d, "b.board")
        with open(path, "w") as f:
            f.write("arch: x86_64\n-device pcie-root-port,id=rp1,addr=0x10\n-device qemu-xhci,id=hp,bus=rp1\n"
                    "during watch: pcie_aer_inject_error rp1 MALF_TLP\nduring watch: aer_inject hp BAD_TLP\n"
                    "during watch: device_del hp\nduring watch: device_add qemu-xhci,id=hp,bus=rp1\n")
        b = Board(path)
        sent = []
        # The unplugged device is listed by `info pci` once more, then gone.
        listed = iter(['  Bus  1, device   0, function 0:\n    USB controller: PCI device 1b36:000d\n      id "hp"\n', ""])

        def monitor(sock, command, timeout=10):
            sent.append(command)
            return next(listed) if command == "info pci" else "OK\n"

        with mock.patch.object(boot, "qemu_command", return_value=acting_guest(record)), \
                mock.patch.object(boot, "monitor_command", side_effect=monitor), \
                mock.patch.object(boot, "AER_PAUSE_SECONDS", 0), mock.patch.object(boot.time, "sleep"):
            r = boot.boot(b, "k", "i", workdir, HEADROOM, "tcg", log=lambda *a: None)
        self.assertTrue(r.done, r.error)
        self.assertEqual(sent, ["pcie_aer_inject_error rp1 MALF_TLP", "device_del hp", "info pci", "info pci",
                                "device_add qemu-xhci,id=hp,bus=rp1"])
        with open(record) as f:
            answers = f.read().splitlines()
        # The aer_inject record of 0000:01:00.0 (the xhci behind the port), then go.
        self.assertEqual(answers, ["aer " + board_module.aer_inject_record("0000:01:00.0", "BAD_TLP"), "go"])
        self.assertEqual(r.host["during watch: aer_inject hp BAD_TLP"][0], 0)

    def test_the_counts_expected_from_what_the_x86_board_injects(self):
        b = Board(os.path.join(HERE, "boards", "x86_64-q35.board"))
        want, at, unknown = checks.injected(b, "watch")
        self.assertEqual(unknown, [])
        # rp1's correctable error through QEMU's monitor: the kernel is never told.
        self.assertEqual(at, {"0000:00:10.0", "0000:00:13.0", "0000:04:00.0"})
        self.assertEqual(want, {
            ("0000:00:13.0", "nonfatal", "CmpltAbrt"): 2, ("0000:00:13.0", "nonfatal", "UnxCmplt"): 1,
            ("0000:00:13.0", "fatal", "MalfTLP"): 1, ("0000:00:13.0", "nonfatal", "ECRC"): 1,
            ("0000:04:00.0", "correctable", "BadDLLP"): 2, ("0000:04:00.0", "correctable", "Timeout"): 1,
        })
        self.assertEqual(checks.replugged(b, "watch"), [("xhci", "rp1")])
        # On virt no firmware sets SERR#: QEMU's monitor reaches the kernel with nothing.
        a = Board(os.path.join(HERE, "boards", "aarch64-virt.board"))
        want, at, _ = checks.injected(a, "watch")
        self.assertEqual(want, {("0000:00:0b.0", "nonfatal", "ECRC"): 1, ("0000:04:00.0", "correctable", "BadDLLP"): 2,
                                ("0000:04:00.0", "correctable", "Timeout"): 1})
        self.assertEqual(at, {"0000:00:08.0", "0000:00:0b.0", "0000:04:00.0"})
        want, _, _ = checks.injected(b, "watch-disk")
        self.assertEqual(want, {("0000:00:12.0", "correctable", "RxErr"): 2, ("0000:00:12.0", "correctable", "BadTLP"): 1})


class Predictions(unittest.TestCase):
    def test_pci_addresses_are_those_the_kernel_gave_the_x86_board(self):
        b = Board(os.path.join(HERE, "boards", "x86_64-q35.board"))
        predicted = checks.pci_addresses(b)
        self.assertEqual(len(predicted), 9)
        for dev in b.devices:
            if dev.driver not in checks.PCI_DEVICES:
                continue
            bdf = predicted[checks.key(dev)]
            d = os.path.join(CAPTURED, bdf)
            self.assertTrue(os.path.isdir(d), f"{dev.driver} predicted at {bdf}, not in the captured tree")
            ids = ":".join(open(os.path.join(d, f)).read().strip()[2:] for f in ("vendor", "device"))
            self.assertEqual(ids, IDS[dev.driver], f"{dev.driver} at {bdf}")

    def test_auto_placed_devices_take_the_lowest_free_slot(self):
        # Slot 0 is the host bridge's; buses are numbered depth first in slot order.
        path = board_text("arch: aarch64\n-device pcie-root-port,id=a\n-device pcie-root-port,id=b,addr=3\n"
                          "-device pcie-root-port,id=c\n-device nvme,bus=c,serial=x\n")
        b = Board(path)
        os.unlink(path)
        self.assertEqual(checks.pci_addresses(b), {"a": "0000:00:01.0", "c": "0000:00:02.0", "b": "0000:00:03.0",
                                                   "nvme@5": "0000:02:00.0"})

    def test_usb_speed_is_the_slowest_of_controller_hubs_and_device(self):
        b = Board(os.path.join(HERE, "boards", "aarch64-virt.board"))
        speeds = {d.props["serial"]: checks.usb_controller_and_speed(b, d)[1]
                  for d in b.devices if d.driver in ("usb-storage", "usb-uas")}
        self.assertEqual(speeds, {"lab-bot": 5000.0, "lab-uas": 5000.0, "lab-hubdisk": 12.0, "lab-ehcidisk": 480.0})

    def test_a_pcie_endpoint_on_the_root_bus_is_expected_without_a_link(self):
        # q35's pcie.0 holds the xhci as a root-complex integrated endpoint (no link, as Linux
        # and headroom say), the NVMe behind a root port has its 2.5 GT/s x1.
        path = board_text("arch: x86_64\n-device qemu-xhci,id=xhci,bus=pcie.0,addr=0x14\n"
                          "-device pcie-root-port,id=rp1,bus=pcie.0,addr=0x10,x-speed=8,x-width=4\n"
                          "-device nvme,id=nvme0,bus=rp1,serial=n\n")
        b = Board(path)
        os.unlink(path)
        addr = checks.pci_addresses(b)
        none = {"current": None, "max": None}
        x1 = {"current": {"speed_gts": 2.5, "width": 1}, "max": {"speed_gts": 2.5, "width": 1}}
        functions = [
            {"address": addr["xhci"], "class": "0c0330", "driver": "xhci_hcd", "kernel_link": none},
            {"address": addr["rp1"], "class": "060400", "driver": "pcieport",
             "kernel_link": {"current": x1["current"], "max": {"speed_gts": 8.0, "width": 4}}},
            {"address": addr["nvme0"], "class": "010802", "driver": "nvme", "kernel_link": x1},
        ]
        link = {"upstream": addr["rp1"], "downstream": addr["nvme0"],
                "comparison": {"upstream": {"speed_gts": 8.0, "width": 4}, "current": x1["current"],
                               "downstream": x1["current"]},
                "downgraded": {"speed": False, "width": False}}
        audit = {"kind": "audit", "pci": {"functions": functions, "links": [link]}, "findings": [],
                 "usb": {"devices": []}, "block": {"devices": []}, "net": {"interfaces": []}}
        r = boot.Result()
        r.booted, r.done, r.rc, r.files = True, True, {"audit": 0}, {"audit.json": json.dumps(audit).encode()}
        b.steps = ["audit"]
        out = checks.check(b, r, {}, tempfile.gettempdir(), HEADROOM)
        failed = [w for ok, w in out if not ok]
        self.assertEqual(failed, [])
        self.assertIn(f"audit: qemu-xhci xhci at {addr['xhci']} has no PCIe link (an integrated endpoint on pcie.0)",
                      [w for _, w in out])


def with_host(doc, hostname, machine_id, kernel):
    """DOC with every envelope's host (the survey's and its parts') made the board's."""
    if isinstance(doc, dict):
        if isinstance(doc.get("host"), dict):
            doc["host"].update(hostname=hostname, machine_id=machine_id, kernel=kernel)
        for v in doc.values():
            with_host(v, hostname, machine_id, kernel)
    elif isinstance(doc, list):
        for v in doc:
            with_host(v, hostname, machine_id, kernel)
    return doc


class History(unittest.TestCase):
    def test_each_board_runs_under_a_hostname_and_machine_id_of_its_own(self):
        boards = [Board(p) for p in sorted(glob.glob(os.path.join(HERE, "boards", "*.board")))]
        ids = [b.machine_id for b in boards]
        self.assertEqual(len(set(ids)), len(boards))
        self.assertEqual(len({b.hostname for b in boards}), len(boards))
        for b in boards:
            self.assertRegex(b.machine_id, r"^[0-9a-f]{32}$")
            self.assertEqual(b.hostname, b.name)
            self.assertEqual(Board(b.path).machine_id, b.machine_id, "the same board, the same machine-id")
        path = board_text("arch: x86_64\n")
        odd = os.path.join(os.path.dirname(path), "lab board;$(reboot).board")
        os.rename(path, odd)
        try:
            b = Board(odd)
        finally:
            os.unlink(odd)
        self.assertEqual(b.hostname, "lab-board---reboot-")
        conf = shell_conf({"LAB_HOSTNAME": b.hostname})
        self.assertEqual(conf, "LAB_HOSTNAME=lab-board---reboot-\n")

    def test_only_the_boards_own_documents_of_steps_that_ended_well_are_imported(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        os.makedirs(os.path.join(d, "out"))
        doc = '{"schema_version": 1, "kind": "audit"}'
        for n, text in (("audit.json", doc), ("audit.err", ""), ("survey.json", doc), ("latency.json", doc),
                        ("net-host-client-iperf3.host.json", doc),
                        # A script's JSON a step brings back (bench/vs-v4l2-ctl.sh's) is no document.
                        ("video-vs-v4l2-ctl.json", '{"rounds": 3}'), ("broken.json", "{")):
            with open(os.path.join(d, "out", n), "w") as f:
                f.write(text)
        docs = history.documents(d, {"audit": 0, "survey": 0, "latency": 1, "video-vs-v4l2-ctl": 0, "broken": 0})
        self.assertEqual([os.path.basename(p) for p in docs], ["audit.json", "survey.json"])
        self.assertEqual(history.documents(os.path.join(d, "none"), {}), [])

    def test_a_compare_row_is_read_cell_by_cell(self):
        md = "| Setting | a | b |\n| --- | --- | --- |\n| host | x86_64-q35 (machine-id 1) | evil \\| x |\n"
        self.assertEqual(history.table_row(md, "host"), ["host", "x86_64-q35 (machine-id 1)", "evil | x"])
        self.assertIsNone(history.table_row(md, "kernel"))

    def test_boards_documents_meet_in_one_postgresql_history_and_compare_side_by_side(self):
        # The lab's step end to end against Debian's server, with captured documents standing
        # in for two boards' (their host made each board's).
        try:
            history.server_bin()
            ready = os.access(HEADROOM, os.X_OK)
        except history.Skipped:
            ready = False
        if not ready:
            if os.environ.get("CI") == "true":
                self.fail("PostgreSQL's server (postgresql) and target/debug/headroom are needed under CI")
            self.skipTest("PostgreSQL's server or target/debug/headroom is missing")
        fixtures = os.path.join(REPO, "tests", "fixtures", "results")
        came_back = []
        for name, kernel in (("x86_64-q35", "6.1.0-57-amd64"), ("aarch64-virt", "6.1.0-50-arm64")):
            b = Board(os.path.join(HERE, "boards", f"{name}.board"))
            wd = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, wd)
            os.makedirs(os.path.join(wd, "out"))
            for step, fixture in (("survey", "survey-rpi5.json"), ("disk", "rpi5-gen3.json"), ("raw", "rpi5-gen2.json")):
                with open(os.path.join(fixtures, fixture)) as f:
                    doc = with_host(json.load(f), b.hostname, b.machine_id, kernel)
                with open(os.path.join(wd, "out", f"{step}.json"), "w") as f:
                    json.dump(doc, f)
            r = boot.Result()
            r.kernel, r.rc = kernel, {"survey": 0, "disk": 0, "raw": 1}
            came_back.append((b, r, wd))
        before = set(glob.glob(os.path.join(tempfile.gettempdir(), "headroom-lab-*")))
        out = history.check(came_back, HEADROOM)
        self.assertEqual([w for ok, w in out if not ok], [])
        said = "\n".join(w for _, w in out)
        self.assertIn("history: x86_64-q35's 2 documents imported with `history import`", said)
        self.assertIn("history --kind survey: aarch64-virt's survey as host aarch64-virt", said)
        self.assertIn("compare: each board's column has its own kernel, 6.1.0-57-amd64, 6.1.0-50-arm64", said)
        # The server is stopped and its directory gone.
        self.assertEqual(set(glob.glob(os.path.join(tempfile.gettempdir(), "headroom-lab-*"))), before)

        # Two boards that report each other's identity fail, naming the board.
        came_back[0][1].kernel = "6.1.0-50-arm64"
        failed = [w for ok, w in history.check(came_back, HEADROOM) if not ok]
        self.assertTrue(any(w.startswith("history --kind survey: x86_64-q35's survey") for w in failed), failed)


if __name__ == "__main__":
    unittest.main()
