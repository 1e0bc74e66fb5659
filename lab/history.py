"""The lab's history in PostgreSQL: every board's documents in one database on the host, and
`compare` putting the boards side by side.

The board binaries carry no PostgreSQL client (their size limit), so a board's runs reach a
lab's database as its documents do here: the lab brings them back to the host and the host's
headroom saves them with `history import`. After the boards ran, this step starts a PostgreSQL
server of its own (Debian's, as user nobody, in a temporary directory, on a Unix socket there
and no TCP port, with a password only headroom's environment carries), imports each board's
documents twice (the second import stores nothing: a run has one id everywhere), lists the
surveys with `history --kind survey` and compares the boards' newest surveys with `compare
--kind survey HOST:latest ...`. The server is stopped and its directory removed at the end,
also when the lab is interrupted.

What is checked comes from the board files (each board's hostname and machine-id, set by the
guest's /init from the board's name, and its architecture's Debian kernel flavour) and from the
guest's own `uname -r`, never from headroom's output.
"""

import glob
import json
import os
import secrets
import shutil
import subprocess
import tempfile

# Debian's server binaries (package postgresql): /usr/lib/postgresql/VERSION/bin.
PG_BINS = "/usr/lib/postgresql/*/bin"
NOBODY = 65534
# Every command of this step is bounded (a server that does not answer fails the step).
SECONDS = 120


class Skipped(Exception):
    """What the host lacks to run this step, in one sentence that says how to get it."""


def server_bin():
    """The newest installed PostgreSQL server's bin directory, or Skipped."""
    found = sorted(
        (d for d in glob.glob(PG_BINS) if all(os.access(os.path.join(d, t), os.X_OK) for t in ("initdb", "pg_ctl", "createdb"))),
        key=lambda d: [int(x) if x.isdigit() else 0 for x in d.split("/")[-2].split(".")],
    )
    if not found:
        raise Skipped("PostgreSQL's server is not installed (Debian: apt-get install postgresql)")
    return found[-1]


def is_document(path):
    """Whether PATH holds a headroom result document (an object with `schema_version` and
    `kind`), not a peer's or a script's JSON that a step also brings back."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(d, dict) and "schema_version" in d and "kind" in d


def documents(workdir, rc):
    """The board's own documents under WORKDIR/out: every NAME.json of a step that exited 0
    (not the host side's *.host.json) that is a headroom result document, in name order."""
    out = os.path.join(workdir, "out")
    if not os.path.isdir(out):
        return []
    names = sorted(n for n in os.listdir(out) if n.endswith(".json") and not n.endswith(".host.json"))
    return [p for p in (os.path.join(out, n) for n in names if rc.get(n.removesuffix(".json")) == 0)
            if is_document(p)]


def table_row(markdown, first):
    """The cells of the first Markdown table row whose first cell is FIRST, unescaped as far as
    headroom escapes a cell (`\\|`), or None."""
    for line in markdown.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|")):
            continue
        cells, cell, i = [], "", 1
        while i < len(line) - 1:
            if line[i] == "\\" and i + 1 < len(line) - 1:
                cell += line[i + 1]
                i += 2
                continue
            if line[i] == "|":
                cells.append(cell.strip())
                cell = ""
            else:
                cell += line[i]
            i += 1
        cells.append(cell.strip())
        if cells and cells[0] == first:
            return cells
    return None


class Server:
    """A PostgreSQL server of this step's own: initdb and pg_ctl as nobody (as the user
    running the lab when that is not root: initdb refuses root), stopped and removed by
    stop()."""

    def __init__(self, bindir):
        self.bindir = bindir
        self.dir = tempfile.mkdtemp(prefix="headroom-lab-pg-")
        self.port = 5432  # the socket's name in a directory of its own: no port is taken
        self.password = secrets.token_urlsafe(18)
        self.started = False
        self.as_nobody = os.geteuid() == 0
        if self.as_nobody:
            os.chown(self.dir, NOBODY, NOBODY)
        pwfile = os.path.join(self.dir, "pw")
        with open(os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(self.password)
        if self.as_nobody:
            os.chown(pwfile, NOBODY, NOBODY)
        try:
            self.tool("initdb", "-D", self.data, "-U", "lab", "--auth=scram-sha-256", "--no-sync",
                      "-E", "UTF8", "--locale=C", f"--pwfile={pwfile}")
        finally:
            os.unlink(pwfile)

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def tool(self, name, *args):
        """Run one of the server's programs as the server's user; RuntimeError with its own
        words when it fails."""
        kw = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if self.as_nobody else {}
        p = subprocess.run([os.path.join(self.bindir, name), *args], cwd=self.dir, capture_output=True, text=True,
                           timeout=SECONDS, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}, **kw)
        if p.returncode != 0:
            log = ""
            if os.path.exists(os.path.join(self.dir, "log")):
                with open(os.path.join(self.dir, "log"), errors="replace") as f:
                    log = f.read()[-500:]
            raise RuntimeError(f"{name} failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()[-500:]} {log}".strip())
        return p.stdout

    def start(self):
        self.tool("pg_ctl", "-D", self.data, "-w", "-t", "60", "-l", os.path.join(self.dir, "log"), "-o",
                  f"-k {self.dir} -p {self.port} -c listen_addresses='' -c fsync=off", "start")
        self.started = True
        # The lab's database, made as a lab's administrator makes it; headroom creates its
        # tables there.
        p = subprocess.run([os.path.join(self.bindir, "createdb"), "-h", self.dir, "-p", str(self.port), "-U", "lab", "lab"],
                           capture_output=True, text=True, timeout=SECONDS, env=self.env())
        if p.returncode != 0:
            raise RuntimeError(f"createdb failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")

    def env(self):
        """The environment a client of this server runs in: the password where libpq (and
        headroom) look for it, never on a command line; no HEADROOM_DB or PG* of the caller's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG") and k != "HEADROOM_DB"}
        env["PGPASSWORD"] = self.password
        return env

    @property
    def url(self):
        return f"postgresql://lab@/lab?host={self.dir}&port={self.port}&sslmode=disable"

    def stop(self):
        try:
            if self.started:
                self.tool("pg_ctl", "-D", self.data, "-w", "-t", "60", "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class History:
    """The step's checks, as [(holds, what)] lines like a board's."""

    def __init__(self, boards, host_headroom, keep=None):
        # boards: [(Board, boot.Result, workdir)] of the boards that came back; keep: where
        # compare's output is kept for the user (compare-surveys.md), if anywhere.
        self.boards = boards
        self.headroom = host_headroom
        self.keep = keep
        self.out = []
        self.server = None
        self.home = None

    def ok(self, cond, what, why=""):
        self.out.append((bool(cond), what if cond or not why else f"{what} ({why})"))
        return bool(cond)

    def headroom_run(self, *args):
        """(exit code, stdout, stderr) of the host's headroom against the lab's database, with a
        local history of its own (XDG_DATA_HOME in the step's directory)."""
        env = self.server.env()
        env["XDG_DATA_HOME"] = os.path.join(self.home, "data")
        env["HOME"] = self.home
        try:
            p = subprocess.run([self.headroom, *args], capture_output=True, text=True, timeout=SECONDS, env=env)
        except subprocess.TimeoutExpired:
            return None, "", f"headroom {' '.join(args[:2])} did not end within {SECONDS} s"
        for text in (p.stdout, p.stderr):
            if self.server.password in text:
                self.out.append((False, f"history: headroom {args[0]} printed the database's password"))
        return p.returncode, p.stdout, p.stderr

    def run(self, bindir):
        self.home = tempfile.mkdtemp(prefix="headroom-lab-home-")
        try:
            try:
                self.server = Server(bindir)
                self.server.start()
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                self.ok(False, "history: a PostgreSQL server of the lab's own started", str(e))
                return self.out
            self.checks()
        finally:
            if self.server is not None:
                try:
                    self.server.stop()
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                    self.ok(False, "history: the lab's PostgreSQL server stopped", str(e))
            shutil.rmtree(self.home, ignore_errors=True)
        return self.out

    def checks(self):
        url = self.server.url
        imported = {}
        for b, result, workdir in self.boards:
            docs = documents(workdir, result.rc)
            rc, out, err = self.headroom_run("history", "import", *docs, "--db", url)
            saved = sum(1 for l in out.splitlines() if ": saved as #" in l)
            if self.ok(rc == 0 and docs and saved == len(docs),
                       f"history: {b.name}'s {len(docs)} documents imported with `history import`",
                       f"exit {rc}, {saved} saved: {err.strip()[-300:]}"):
                imported[b.name] = len(docs)
        total = sum(imported.values())
        for b, result, workdir in self.boards:
            docs = documents(workdir, result.rc)
            rc, out, err = self.headroom_run("history", "import", *docs, "--db", url)
            again = sum(1 for l in out.splitlines() if ": already saved as #" in l)
            self.ok(rc == 0 and again == len(docs), f"history: {b.name}'s documents imported again are not stored twice",
                    f"exit {rc}, {again} of {len(docs)} already there: {err.strip()[-300:]}")
        rc, out, err = self.headroom_run("history", "--db", url, "--json")
        runs = json_runs(out)
        self.ok(rc == 0 and runs is not None and len(runs) == total,
                f"history: the database holds {total} runs, each once", f"exit {rc}, {len(runs or [])} runs: {err.strip()[-300:]}")

        rc, out, err = self.headroom_run("history", "--db", url, "--kind", "survey", "--json")
        surveys = json_runs(out) or []
        for b, result, _ in self.boards:
            mine = [r for r in surveys if r.get("machine_id") == b.machine_id]
            row = mine[0] if len(mine) == 1 else {}
            want = (b.hostname, b.machine_id, result.kernel)
            got = (row.get("host"), row.get("machine_id"), row.get("kernel"))
            self.ok(rc == 0 and len(mine) == 1 and got == want and flavoured(result.kernel, b),
                    f"history --kind survey: {b.name}'s survey as host {b.hostname}, machine-id {b.machine_id[:12]}, "
                    f"kernel {result.kernel} ({b.arch})",
                    f"exit {rc}, {len(mine)} surveys with its machine-id: {got}; {err.strip()[-200:]}")
            rc_h, out_h, err_h = self.headroom_run("history", "--db", url, "--host", b.hostname, "--json")
            hosts = {r.get("machine_id") for r in json_runs(out_h) or []}
            self.ok(rc_h == 0 and len(json_runs(out_h) or []) == imported.get(b.name) and hosts == {b.machine_id},
                    f"history --host {b.hostname}: that board's {imported.get(b.name)} runs and no other board's",
                    f"exit {rc_h}, {len(json_runs(out_h) or [])} runs of machine-ids {sorted(map(str, hosts))}; {err_h.strip()[-200:]}")
        if len(self.boards) < 2:
            return
        names = [f"{b.hostname}:latest" for b, _, _ in self.boards]
        rc, out, err = self.headroom_run("compare", "--db", url, "--kind", "survey", *names)
        if not self.ok(rc == 0, f"compare --kind survey {' '.join(names)}: the boards' newest surveys side by side",
                       f"exit {rc}: {err.strip()[-300:]}"):
            return
        if self.keep:
            with open(os.path.join(self.keep, "compare-surveys.md"), "w") as f:
                f.write(out)
        host = table_row(out, "host")
        kernel = table_row(out, "kernel")
        want_host = [(b.hostname, b.machine_id[:12]) for b, _, _ in self.boards]
        self.ok(host is not None and len(host) == 1 + len(self.boards)
                and all(cell.startswith(h) and m in cell for cell, (h, m) in zip(host[1:], want_host)),
                "compare: one column per board, in the order given, each its hostname and machine-id",
                f"host row {host}")
        want_kernel = [r.kernel for _, r, _ in self.boards]
        self.ok(kernel is not None and kernel[1:] == want_kernel and all(flavoured(r.kernel, b) for b, r, _ in self.boards),
                f"compare: each board's column has its own kernel, {', '.join(map(str, want_kernel))} "
                f"({', '.join(b.arch for b, _, _ in self.boards)})",
                f"kernel row {kernel}")


def json_runs(text):
    try:
        return json.loads(text)["runs"]
    except (ValueError, KeyError, TypeError):
        return None


def flavoured(release, board):
    """Whether RELEASE is a Debian kernel of the board's architecture (6.1.0-57-amd64 on
    x86_64, -arm64 on aarch64, -armmp on armv7)."""
    return bool(release) and release.endswith("-" + board.flavour)


def check(boards, host_headroom, keep=None):
    """[(holds, what)] of the history step over BOARDS ([(Board, Result, workdir)]), or
    Skipped naming what the host lacks; compare's output is kept in KEEP/compare-surveys.md."""
    bindir = server_bin()
    if not (host_headroom and os.access(host_headroom, os.X_OK)):
        raise Skipped(f"the host's headroom ({host_headroom}) is not built: `cargo build -p headroom` builds it, "
                      "with the PostgreSQL client the board binaries leave out")
    return History(boards, host_headroom, keep).run(bindir)
