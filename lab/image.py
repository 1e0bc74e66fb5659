"""Kernels, busybox and the initramfs a board boots.

Debian 12's own kernels and busybox-static, fetched with `apt-get download` (never installed on
this host), unpacked with `dpkg-deb -x` and cached under target/lab/cache keyed by package and
version. The initramfs is a newc cpio archive written here: busybox, the board's headroom
binary, the kernel modules the board's devices need (in dependency order) and lab/guest/init.
"""

import glob
import gzip
import os
import shutil
import stat
import subprocess

# Drivers the boards' devices need, by module name (the file is NAME.ko; '-' and '_' are
# interchangeable in module names). crc32c_generic: ext4 needs a crc32c implementation and its
# modinfo does not say so (it asks for the crypto API's "crc32c" at run time).
MODULES = [
    "nvme", "xhci_pci", "xhci_plat_hcd", "ehci_pci", "ehci_platform", "usb_storage", "uas",
    "sd_mod", "e1000e", "ext4", "crc32c_generic",
    # /dev/aer_inject: AER errors a board injects from inside (`during STEP: aer_inject ...`).
    "aer_inject",
    # A virtual V4L2 capture device (drivers/media/test-drivers/vivid) for `bench video`.
    "vivid",
]

# The gadget step's modules, loaded only by that step (after every other step has read the
# board): dummy_hcd (a software USB device controller wired to a software host controller),
# configfs and libcomposite for a configfs gadget, the mass-storage, NCM and HID functions, and
# the host side's NCM driver (usb-storage and sd_mod come with MODULES). Debian 12's amd64,
# arm64 and armmp 6.1 kernels build all of them as modules.
GADGET_MODULES = [
    "dummy_hcd", "configfs", "libcomposite", "usb_f_mass_storage", "usb_f_ncm", "usb_f_hid",
    "cdc_ncm",
]

# v4l2-ctl, the peer of `bench video`, with the shared libraries it loads (`readelf -d`:
# libv4l2, libstdc++, libm, libgcc_s, libc; libv4l2 loads libv4lconvert, which loads libjpeg),
# from Debian's packages for the board's architecture, run through the packages' own dynamic
# loader (the initramfs has no /lib of a C library).
V4L2_CTL_PACKAGES = ["v4l-utils", "libv4l-0", "libv4lconvert0", "libjpeg62-turbo", "libstdc++6",
                     "libgcc-s1", "libc6"]
V4L2_CTL_LIBS = ("libv4l2.so.0", "libv4lconvert.so.0", "libjpeg.so.62", "libstdc++.so.6",
                 "libm.so.6", "libgcc_s.so.1", "libc.so.6", "ld-linux")


class ImageError(Exception):
    pass


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def apt_query(*args):
    return subprocess.run(["apt-cache", *args], capture_output=True, text=True).stdout


def hint(deb_arch):
    add = "" if deb_arch == os.popen("dpkg --print-architecture").read().strip() else f"dpkg --add-architecture {deb_arch} && "
    return f"run `{add}apt-get update`"


def resolve(boards):
    """{(package, Debian architecture): version} of every board's kernel and busybox: the
    kernel is linux-image-<abi>-<flavour>, the package the meta package linux-image-<flavour>
    depends on. Two apt-cache calls in all (each takes seconds)."""
    metas = sorted({(f"linux-image-{b.flavour}", b.deb_arch) for b in boards})
    wanted = []
    text = apt_query("depends", *[f"{m}:{a}" for m, a in metas])
    for (meta, arch), block in zip(metas, split_blocks(text, [f"{m}:{a}" if a != host_arch() else m for m, a in metas])):
        dep = next((l.split()[1].split(":")[0] for l in block if l.strip().startswith("Depends:") and "linux-image-" in l), None)
        if dep is None:
            raise ImageError(f"apt knows no {meta}:{arch}: {hint(arch)} (the lab fetches Debian's kernels with apt-get download)")
        wanted.append((dep, arch))
    wanted += sorted({("busybox-static", b.deb_arch) for b in boards})
    wanted += sorted({(p, b.deb_arch) for b in boards if "video" in b.steps for p in V4L2_CTL_PACKAGES})
    versions = {}
    text = apt_query("policy", *[f"{p}:{a}" for p, a in wanted])
    for (pkg, arch), block in zip(wanted, split_blocks(text, [f"{p}:{a}" if a != host_arch() else p for p, a in wanted])):
        cand = next((l.split(None, 1)[1] for l in block if l.strip().startswith("Candidate:")), "(none)")
        if cand == "(none)":
            raise ImageError(f"apt has no candidate for {pkg}:{arch}: {hint(arch)}")
        versions[(pkg, arch)] = cand
    return versions


def host_arch():
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()


def split_blocks(text, heads):
    """apt-cache prints one block per package, headed by its name (`name:arch` for a foreign
    architecture; policy adds a colon)."""
    blocks, cur = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            cur = blocks.setdefault(line.removesuffix(":"), [])
        elif cur is not None:
            cur.append(line)
    return [blocks.get(h, []) for h in heads]


def fetch(pkg, deb_arch, version, cache):
    """Unpack PKG:DEB_ARCH=VERSION into CACHE/PKG_VERSION_ARCH (once) and return that directory."""
    dest = os.path.join(cache, f"{pkg}_{version.replace(':', '%3a')}_{deb_arch}")
    if os.path.isdir(dest):
        return dest
    tmp = dest + ".part"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        subprocess.run(
            ["apt-get", "download", "-q", f"{pkg}:{deb_arch}={version}"],
            cwd=tmp, check=True, capture_output=True, text=True,
        )
    except subprocess.CalledProcessError as e:
        raise ImageError(f"apt-get download {pkg}:{deb_arch}={version} failed: {e.stderr.strip()}")
    (deb,) = glob.glob(os.path.join(tmp, "*.deb"))
    run(["dpkg-deb", "-x", deb, tmp])
    os.unlink(deb)
    os.rename(tmp, dest)
    return dest


def kernel(board, versions, cache):
    """(vmlinuz path, modules directory, kernel release) of the board's Debian kernel."""
    pkg = next(p for p, a in versions if a == board.deb_arch and p.startswith("linux-image-"))
    d = fetch(pkg, board.deb_arch, versions[(pkg, board.deb_arch)], cache)
    (vmlinuz,) = glob.glob(os.path.join(d, "boot", "vmlinuz-*"))
    (moddir,) = glob.glob(os.path.join(d, "lib", "modules", "*"))
    return vmlinuz, moddir, os.path.basename(moddir)


def busybox(board, versions, cache):
    d = fetch("busybox-static", board.deb_arch, versions[("busybox-static", board.deb_arch)], cache)
    return os.path.join(d, "bin", "busybox")


def v4l2_ctl(board, versions, cache):
    """{name in the image: file} of v4l2-ctl, its libraries and the dynamic loader (`ld.so`),
    or {} when the board runs no video step."""
    if "video" not in board.steps:
        return {}
    out = {}
    for pkg in V4L2_CTL_PACKAGES:
        d = fetch(pkg, board.deb_arch, versions[(pkg, board.deb_arch)], cache)
        for root, _, names in os.walk(d):
            for n in names:
                path = os.path.join(root, n)
                # An absolute link (/lib64/ld-linux-x86-64.so.2) would name the host's file.
                if os.path.islink(path) and os.path.isabs(os.readlink(path)):
                    continue
                if n == "v4l2-ctl" and root.endswith("/bin"):
                    out["v4l2-ctl"] = path
                elif n.startswith("ld-linux") and ".so" in n:
                    out.setdefault("ld.so", path)
                else:
                    for lib in V4L2_CTL_LIBS:
                        if n == lib:
                            out[n] = path
    missing = [n for n in ("v4l2-ctl", "ld.so") + V4L2_CTL_LIBS[:-1] if n not in out]
    if missing:
        raise ImageError(f"the {board.deb_arch} packages {' '.join(V4L2_CTL_PACKAGES)} lack {' '.join(missing)}")
    return out


def modinfo_depends(path):
    """The `depends=` field of a .ko's .modinfo section (NUL-separated key=value strings)."""
    with open(path, "rb") as f:
        data = f.read()
    i = data.find(b"\0depends=")
    if i < 0:
        return []
    end = data.index(b"\0", i + 1)
    value = data[i + len(b"\0depends=") : end].decode()
    return [m for m in value.split(",") if m]


def modules_in_order(moddir, wanted):
    """Relative paths of WANTED's .ko files and their dependencies, each after what it needs.
    Modules built into the kernel (modules.builtin) need nothing loaded."""
    files = {}
    for root, _, names in os.walk(os.path.join(moddir, "kernel")):
        for n in names:
            if n.endswith(".ko"):
                files[n[:-3].replace("-", "_")] = os.path.join(root, n)
    ordered, seen = [], set()

    def visit(name):
        name = name.replace("-", "_")
        if name in seen or name not in files:
            return
        seen.add(name)
        for dep in modinfo_depends(files[name]):
            visit(dep)
        ordered.append(os.path.relpath(files[name], moddir))

    for m in wanted:
        visit(m)
    return ordered


class Cpio:
    """A newc ("070701") cpio archive, what the kernel unpacks as initramfs."""

    def __init__(self, out):
        self.f = open(out, "wb")
        self.ino = 1

    def _entry(self, name, mode, data=b"", nlink=1):
        name_b = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name_b), 0]
        self.ino += 1
        hdr = b"070701" + b"".join(b"%08X" % v for v in fields)
        self.f.write(hdr + name_b)
        self.f.write(b"\0" * (-(len(hdr) + len(name_b)) % 4))
        self.f.write(data)
        self.f.write(b"\0" * (-len(data) % 4))

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, name, data, mode=0o644):
        self._entry(name, stat.S_IFREG | mode, data)

    def copy(self, name, src, mode=0o644):
        with open(src, "rb") as f:
            self.file(name, f.read(), mode)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def close(self):
        self._entry("TRAILER!!!", 0)
        self.f.close()


def initramfs(out, busybox_bin, headroom_bin, moddir, modules, init_script, conf, peers=None):
    """Write the board's initramfs (gzip-compressed newc cpio) to OUT; PEERS ({name: file},
    from v4l2_ctl) go to /opt/v4l, with the script comparing the two under /opt/bench."""
    raw = out + ".cpio"
    c = Cpio(raw)
    for d in ("bin", "sbin", "dev", "proc", "sys", "tmp", "mnt", "root", "lab", "lib", "lib/modules", "etc"):
        c.dir(d)
    c.copy("bin/busybox", busybox_bin, 0o755)
    c.symlink("bin/sh", "busybox")
    c.copy("bin/headroom", headroom_bin, 0o755)
    with open(init_script, "rb") as f:
        c.file("init", f.read(), 0o755)
    c.file("lab/conf", conf.encode(), 0o644)
    names = []
    for rel in modules:
        name = os.path.basename(rel)
        c.copy(f"lib/modules/{name}", os.path.join(moddir, rel))
        names.append(name)
    c.file("lab/modules", ("\n".join(names) + "\n").encode())
    # The gadget step's own modules (and what they need beyond the board's), in order.
    gadget = [m for m in modules_in_order(moddir, [os.path.basename(m)[:-3] for m in modules] + GADGET_MODULES)
              if os.path.basename(m) not in names]
    for rel in gadget:
        c.copy(f"lib/modules/{os.path.basename(rel)}", os.path.join(moddir, rel))
    c.file("lab/gadget-modules", "".join(os.path.basename(r) + "\n" for r in gadget).encode())
    if peers:
        c.dir("opt")
        c.dir("opt/v4l")
        c.dir("opt/bench")
        for name, src in sorted(peers.items()):
            c.copy(f"opt/v4l/{name}", src, 0o755)
        bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "vs-v4l2-ctl.sh")
        c.copy("opt/bench/vs-v4l2-ctl.sh", bench, 0o755)
    # A few files a real root has, so the probes read what they would on a board.
    c.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    c.file("etc/group", b"root:x:0:\n")
    c.close()
    with open(raw, "rb") as src, gzip.open(out, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst)
    os.unlink(raw)
