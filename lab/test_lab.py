"""The lab's own pure parts, offline: board files and the checker's predictions, the latter
against the sysfs tree captured inside the x86_64 board (tests/fixtures/sysfs/qemu-q35-lab).

    python3 -m unittest discover -s lab
"""

import glob
import os
import tempfile
import unittest

from board import Board, BoardError
import checks

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CAPTURED = os.path.join(REPO, "tests", "fixtures", "sysfs", "qemu-q35-lab", "sys", "bus", "pci", "devices")
# Vendor:device of QEMU 7.2's models (include/hw/pci/pci_ids.h), to tell them apart in the tree.
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
            self.assertEqual(b.steps, ["audit", "path", "disk", "raw", "latency", "count", "survey", "net"], path)

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
        self.assertEqual(b.steps, ["audit", "path", "latency", "count", "survey"])


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


if __name__ == "__main__":
    unittest.main()
