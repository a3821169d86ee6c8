#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The whole-system fault suite: a fleet of idmint minters under a nemesis.

Starts real coordinators on loopback ports in a work directory (a 3-member
etcd cluster, ZooKeeper, two PostgreSQL servers: one for PostgreSQL leases
and the odd ticket store, one for the even ticket store, and a file://
lease directory), a fleet of minting processes of every kind idmint has
(idmintd instances answering HTTP clients, `idmint next --lease` runs, and
minters on the library), and a nemesis that injects faults on a seeded,
reproducible schedule. Every acknowledged id goes to a log per process
incarnation (tests/system/syslog.h); at the end syscheck checks them all and
prints its figures.

    fleet.py --build DIR [--seed N] [--seconds S] [--min-ids N]
             [--min-faults N] [--workdir DIR] [--keep] [--report FILE]

Exits 0 when the checker found nothing wrong, every process a fault affected
minted again afterwards, every fault kind was injected
at least once (and at least --min-faults faults), and at least --min-ids ids
were checked; 1 otherwise; 2 when the fleet could not be set up.

Fault kinds (rows of docs/FAULTS.md):
  kill9          a minter killed with kill -9 and started again (F1, E12, Z3)
  pause          a minter stopped (SIGSTOP) past its lease's TTL, then
                 continued (H1, E9 from the minter's side)
  leader         the etcd leader killed with kill -9, started again later (E8)
  freeze         a coordinator frozen (SIGSTOP) past the TTL: the whole etcd
                 cluster, ZooKeeper, or the PostgreSQL lease server (E2, Z2)
  cut            the link between a minter and its coordinator silenced by
                 its proxy past the TTL, then healed (E5, Z1)
  clock-back     a minter's clock stepped back, then forward again (C2)
  clock-forward  a minter's clock stepped forward, then back (C4)
  clock-fast     a minter's clock run at twice the rate, then at 0.8 of the
                 rate until it is right again (C5)
  store-stop     the even ticket store's server stopped, started again (P10)
  disk-full      the minter's state directory failing every sync (H3)
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(ROOT, "scripts")

TTL_MS = 3000          # every lease's TTL: faults that must outlast it do
KINDS = ["kill9", "pause", "leader", "freeze", "cut", "clock-back",
         "clock-forward", "clock-fast", "store-stop", "disk-full"]


def now_ns():
    return time.time_ns()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signal_pid(pid, sig):
    """Sends sig to pid; False when the process is gone (a cli run that just
    ended, a PostgreSQL backend that just exited): races a fault must ride."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def say(msg):
    sys.stderr.write("fleet: %s\n" % msg)
    sys.stderr.flush()


class Fleet:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.rng = random.Random(args.seed)
        self.work = args.workdir or tempfile.mkdtemp(prefix="idmint-fleet-")
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o755)
        self.logdir = os.path.join(self.work, "logs")
        os.makedirs(os.path.join(self.logdir, "ids"), exist_ok=True)
        self.events = open(os.path.join(self.logdir, "events.tsv"), "a", buffering=1)
        self.lock = threading.Lock()
        self.minters = {}      # name -> Minter
        self.clients = []      # Popen of http clients and cli loops
        self.proxies = {}      # name -> (Popen, [ports])
        self.servers_up = []   # what stop() must stop
        self.offsets = {}      # clock name -> ms
        self.faults = {k: 0 for k in KINDS}
        self.stopping = False

    # ------------------------------------------------------------ events
    def event(self, *fields):
        with self.lock:
            self.events.write("\t".join(str(f) for f in fields) + "\n")

    def set_offset(self, clock, ms):
        path = os.path.join(self.work, "clock-" + clock)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % ms)
        t = now_ns()  # before the minter can read it
        os.rename(tmp, path)
        self.offsets[clock] = ms
        self.event("clock", t, clock, ms)

    # ----------------------------------------------------------- servers
    def script(self, name, *argv, check=True):
        r = subprocess.run(["bash", os.path.join(SCRIPTS, name)] + list(argv),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if check and r.returncode != 0:
            raise RuntimeError("%s %s failed: %s" % (name, " ".join(argv), r.stderr.strip()))
        return r.stdout.strip()

    def start_servers(self):
        self.etcd_dir = os.path.join(self.work, "etcd")
        self.zk_dir = os.path.join(self.work, "zk")
        self.pga_dir = os.path.join(self.work, "pga")
        self.pgb_dir = os.path.join(self.work, "pgb")
        for d in (self.etcd_dir, self.zk_dir, self.pga_dir, self.pgb_dir):
            os.makedirs(d)
        self.servers_up = [("etcd-test-server.sh", self.etcd_dir),
                           ("zk-test-server.sh", self.zk_dir),
                           ("pg-test-server.sh", self.pga_dir),
                           ("pg-test-server.sh", self.pgb_dir)]
        self.etcd_eps = self.script("etcd-test-server.sh", "start", self.etcd_dir, "3").split(",")
        self.zk_ep = self.script("zk-test-server.sh", "start", self.zk_dir)
        self.pga_port = self.script("pg-test-server.sh", "start", self.pga_dir)
        self.pgb_port = self.script("pg-test-server.sh", "start", self.pgb_dir)
        say("etcd %s, zookeeper %s, postgres %s and %s" %
            (",".join(self.etcd_eps), self.zk_ep, self.pga_port, self.pgb_port))

    def pg_url(self, port):
        return "postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable" % port

    def stop_servers(self):
        for script, d in reversed(self.servers_up):
            # a frozen server must be able to die
            for pid in self.server_pids(script, d):
                try:
                    os.kill(pid, signal.SIGCONT)
                except OSError:
                    pass
            self.script(script, "stop", d, check=False)

    def server_pids(self, script, d):
        pids = []
        if script == "pg-test-server.sh":
            try:
                with open(os.path.join(d, "data", "postmaster.pid")) as f:
                    pids.append(int(f.readline()))
            except (OSError, ValueError):
                pass
            return pids
        for n in (1, 2, 3):
            out = self.script(script, "pid", d, str(n), check=False)
            if out.isdigit():
                pids.append(int(out))
        return pids

    # ----------------------------------------------------------- proxies
    def proxy(self, name, ports):
        p = subprocess.Popen([os.path.join(self.build, "tests", "sysproxy")] +
                             [str(x) for x in ports], stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline().split()
        if len(line) != len(ports):
            raise RuntimeError("sysproxy for %s did not start" % name)
        self.proxies[name] = (p, [int(x) for x in line])
        return self.proxies[name][1]

    # ----------------------------------------------------------- minters
    def add(self, m):
        self.minters[m.name] = m
        m.fleet = self
        m.start()

    def supervise(self):
        """Starts again every minter that died by itself (a start refused while
        its coordinator is down, say), after a short wait."""
        while not self.stopping:
            time.sleep(0.2)
            for m in list(self.minters.values()):
                with m.lock:
                    if self.stopping or m.held or m.proc is None:
                        continue
                    rc = m.proc.poll()
                    if rc is None:
                        continue
                    self.event("stop", now_ns(), m.name, m.inc, "exit")
                    m.proc = None
                    m.dead_since = time.monotonic()
            for m in list(self.minters.values()):
                with m.lock:
                    if (not self.stopping and not m.held and m.proc is None and
                            time.monotonic() - m.dead_since > 0.5):
                        m.start_locked()

    # ------------------------------------------------------------ nemesis
    def pick(self, names):
        return names[self.rng.randrange(len(names))]

    def hold(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.05)

    def fault(self, kind):
        """Injects one fault of kind, waits it out, heals it; records it."""
        rng = self.rng
        t0 = now_ns()
        affected = []
        target = ""
        detail = ""
        past_ttl = TTL_MS / 1000 + 0.5 + rng.random()
        if kind == "kill9":
            m = self.minters[self.pick(sorted(self.minters))]
            target, affected = m.name, [m.name]
            detail = m.kill9()
        elif kind == "pause":
            m = self.minters[self.pick(sorted(self.minters))]
            target, affected = m.name, [m.name]
            pid = None
            for _ in range(40):        # a cli loop between two runs
                pid = m.pid()
                if pid and signal_pid(pid, signal.SIGSTOP):
                    break
                pid = None
                time.sleep(0.025)
            self.hold(past_ttl)
            if pid:
                signal_pid(pid, signal.SIGCONT)
            detail = "pid %s stopped %.1f s" % (pid, past_ttl)
        elif kind == "leader":
            n = self.script("etcd-test-server.sh", "leader", self.etcd_dir, check=False)
            if not n.isdigit():
                n = "1"
            target = "etcd-%s" % n
            affected = self.users("etcd")
            self.script("etcd-test-server.sh", "kill", self.etcd_dir, n)
            self.hold(1 + rng.random() * 2)
            self.script("etcd-test-server.sh", "restart", self.etcd_dir, n)
            detail = "member %s killed and restarted" % n
        elif kind == "freeze":
            which = self.pick(["etcd", "zk", "pg"])
            script, d = {"etcd": ("etcd-test-server.sh", self.etcd_dir),
                         "zk": ("zk-test-server.sh", self.zk_dir),
                         "pg": ("pg-test-server.sh", self.pga_dir)}[which]
            pids = self.server_pids(script, d)
            if which == "pg":  # the whole server, not just the postmaster
                pids = self.pg_all_pids(d)
            target, affected = which, self.users(which)
            if which == "pg":  # the odd ticket store's server too
                affected += [n + "-tickets" for n in self.users("tickets")]
            pids = [pid for pid in pids if signal_pid(pid, signal.SIGSTOP)]
            self.hold(past_ttl)
            for pid in pids:
                signal_pid(pid, signal.SIGCONT)
            detail = "%d processes frozen %.1f s" % (len(pids), past_ttl)
        elif kind == "cut":
            name = self.pick(sorted(self.proxies))
            p, _ = self.proxies[name]
            target, affected = name, [name]
            p.send_signal(signal.SIGUSR1)
            self.hold(past_ttl)
            p.send_signal(signal.SIGUSR2)
            detail = "links silent %.1f s" % past_ttl
        elif kind.startswith("clock-"):
            m = self.minters[self.pick(sorted(n for n, x in self.minters.items() if x.clock))]
            target, affected = m.name, [m.name]
            c = m.clock
            base = self.offsets.get(c, 0)
            if kind == "clock-back":
                step = -(500 + rng.randrange(2500))
                self.set_offset(c, base + step)
                self.hold(1 + rng.random() * 2)
                self.set_offset(c, base)
                detail = "stepped %d ms, then back" % step
            elif kind == "clock-forward":
                step = 500 + rng.randrange(2500)
                self.set_offset(c, base + step)
                self.hold(1 + rng.random() * 2)
                self.set_offset(c, base)
                detail = "stepped +%d ms, then back" % step
            else:
                # Rates made of small offset changes, written every 10 ms:
                # a minter reading its file every 20 ms sees the slow phase
                # as steps back of about 4 ms, within logical time's bound
                # (larger steps back would be a strobing clock, C6).
                fast = 0.5 + rng.random()
                t = time.monotonic()
                while time.monotonic() - t < fast:          # twice the rate
                    self.set_offset(c, base + int((time.monotonic() - t) * 1000))
                    time.sleep(0.01)
                ahead = self.offsets[c] - base
                t = time.monotonic()
                while self.offsets[c] > base:               # 0.8 of the rate
                    self.set_offset(c, max(base, base + ahead - int((time.monotonic() - t) * 200)))
                    time.sleep(0.01)
                detail = "x2 for %.1f s (+%d ms), then x0.8 until right" % (fast, ahead)
        elif kind == "store-stop":
            target = "tickets-even"
            affected = [n + "-tickets" for n in self.users("tickets")]
            self.script("pg-test-server.sh", "stop", self.pgb_dir)
            self.hold(1 + rng.random() * 3)
            self.script("pg-test-server.sh", "restart", self.pgb_dir)
            detail = "the even store's server stopped and started again"
        elif kind == "disk-full":
            m = self.minters[self.pick(sorted(n for n, x in self.minters.items() if x.disk))]
            target, affected = m.name, [m.name]
            with open(m.disk_flag, "w"):
                pass
            self.hold(1 + rng.random() * 4)
            os.unlink(m.disk_flag)
            detail = "every sync under its state directory failing"
        t1 = now_ns()
        self.faults[kind] += 1
        self.event("fault", t0, t1, kind, target, ",".join(affected), detail)
        say("%-13s %-16s %s" % (kind, target, detail))

    def pg_all_pids(self, d):
        pids = self.server_pids("pg-test-server.sh", d)
        if not pids:
            return []
        r = subprocess.run(["pgrep", "-P", str(pids[0])], stdout=subprocess.PIPE, text=True)
        return pids + [int(x) for x in r.stdout.split()]

    def users(self, coord):
        return sorted(n for n, m in self.minters.items() if coord in m.coords)

    def nemesis(self, seconds, min_faults):
        """Faults one after another, each kind once in a shuffled first round
        (so a short run has every kind), then at random, with a quiet gap
        between faults, until the time is up (and min_faults are done)."""
        order = KINDS[:]
        self.rng.shuffle(order)
        start = time.monotonic()
        n = 0
        while True:
            done = time.monotonic() - start >= seconds
            if done and n >= max(min_faults, len(KINDS)):
                break
            kind = order[n] if n < len(order) else self.pick(KINDS)
            self.fault(kind)
            n += 1
            self.hold(0.5 + self.rng.random() * 1.5)

    # ------------------------------------------------------------ the run
    def setup(self):
        b = self.build
        idmint = os.path.join(b, "idmint")
        idmintd = os.path.join(b, "idmintd")
        sysmint = os.path.join(b, "tests", "sysmint")
        self.start_servers()
        r = subprocess.run([idmint, "seq", "create", "fleet", "--store",
                            self.pg_url(self.pga_port), "--store", self.pg_url(self.pgb_port)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError("idmint seq create: %s" % r.stdout.strip())
        etcd_ports = [int(e.split(":")[1]) for e in self.etcd_eps]
        etcd = "etcd://" + ",".join(self.etcd_eps)
        zk = "zk://" + self.zk_ep
        pga = self.pg_url(self.pga_port)
        stores = "%s %s" % (pga, self.pg_url(self.pgb_port))
        leases = "file://" + os.path.join(self.work, "leases")
        # Proxies for the minters whose links the nemesis cuts.
        px1 = self.proxy("idmintd-etcd-1", etcd_ports)
        px2 = self.proxy("lib-etcd", etcd_ports)
        px3 = self.proxy("idmintd-zk", [int(self.zk_ep.split(":")[1])])
        etcd_px1 = "etcd://" + ",".join("127.0.0.1:%d" % p for p in px1)
        etcd_px2 = "etcd://" + ",".join("127.0.0.1:%d" % p for p in px2)
        zk_px3 = "zk://127.0.0.1:%d" % px3[0]
        rate = self.args.rate
        # datacenter: 1 for etcd's worker ids, 2 ZooKeeper's, 3 PostgreSQL's,
        # 4 the file directory's: one fleet, one id space.
        self.add(Idmintd("idmintd-etcd-1", idmintd, sysmint, etcd_px1 + "/fleet", 1,
                         ["etcd"], clock=True, disk=True, rate=rate, batch=500))
        self.add(Idmintd("idmintd-etcd-2", idmintd, sysmint, etcd + "/fleet", 1, ["etcd"],
                         clock=True, policy="change-worker", rate=rate // 4, batch=4))
        self.add(Idmintd("idmintd-zk", idmintd, sysmint, zk_px3 + "/fleet", 2, ["zk"],
                         disk=True, rate=rate, batch=500, stores=stores))
        self.add(Idmintd("idmintd-pg", idmintd, sysmint, pga, 3, ["pg"],
                         rate=rate, batch=500, stores=stores))
        self.add(Idmintd("idmintd-file", idmintd, sysmint, leases, 4, ["file"],
                         rate=rate, batch=200))
        self.add(Lib("lib-etcd", sysmint, etcd_px2 + "/fleet", 1, ["etcd"], clock=True,
                     disk=True, rate=rate, batch=300))
        self.add(Lib("lib-file", sysmint, leases, 4, ["file"], clock=True, rate=rate,
                     batch=300))
        self.add(Cli("cli-etcd", sysmint, idmint, etcd + "/fleet", 1, ["etcd"],
                     count=max(1000, rate // 4)))
        self.add(Cli("cli-file", sysmint, idmint, leases, 4, ["file"],
                     count=max(1000, rate // 4)))
        if self.args.rogue:
            rogue = "file://" + os.path.join(self.work, "rogue-leases")
            self.add(Lib("lib-rogue", sysmint, rogue, 4, ["file"], rate=rate, batch=300))
        # Tickets from the odd/even store pair, through two idmintd.
        for name in ("idmintd-zk", "idmintd-pg"):
            self.minters[name].ticket_client(rate // 2)

    def stop_all(self):
        self.stopping = True
        for name, (p, _) in self.proxies.items():
            p.send_signal(signal.SIGUSR2)
        for m in self.minters.values():
            if m.disk and os.path.exists(m.disk_flag):
                os.unlink(m.disk_flag)
            pid = m.pid()
            if pid:
                try:
                    os.kill(pid, signal.SIGCONT)
                except OSError:
                    pass
        for m in self.minters.values():
            m.stop()
        for name, (p, _) in self.proxies.items():
            p.terminate()
            p.wait()

    def check(self):
        syscheck = os.path.join(self.build, "tests", "syscheck")
        r = subprocess.run([syscheck, "--json", self.logdir], stdout=subprocess.PIPE, text=True)
        try:
            figures = json.loads(r.stdout)
        except ValueError:
            figures = None
        text = subprocess.run([syscheck, self.logdir], stdout=subprocess.PIPE,
                              text=True).stdout
        return r.returncode, figures, text


class Minter:
    def __init__(self, name, coords, node, clock=False, disk=False):
        self.name = name
        self.coords = coords
        self.node = node
        self.clock = name if clock else None
        self.disk = disk
        self.inc = 0
        self.proc = None
        self.held = False    # the nemesis has it (killed, to be restarted)
        self.dead_since = 0
        self.lock = threading.Lock()
        self.fleet = None

    def paths(self):
        f = self.fleet
        self.dir = os.path.join(f.work, "m", self.name)
        os.makedirs(self.dir, exist_ok=True)
        self.disk_flag = os.path.join(f.work, "diskfail-" + self.name)
        self.clock_file = os.path.join(f.work, "clock-" + self.name)
        self.out = open(os.path.join(f.logdir, self.name + ".stderr"), "a")
        if self.clock:
            f.set_offset(self.clock, 0)

    def env(self):
        e = dict(os.environ)
        if self.disk:
            e["LD_PRELOAD"] = os.path.join(self.fleet.build, "tests", "libdiskfault.so")
            e["IDMS_DISKFAULT_DIR"] = self.dir
            e["IDMS_DISKFAULT_FLAG"] = self.disk_flag
        return e

    def start(self):
        self.paths()
        with self.lock:
            self.start_locked()

    def start_locked(self):
        self.inc += 1
        self.proc = subprocess.Popen(self.argv(), stdout=self.out, stderr=self.out,
                                     env=self.env(), start_new_session=True)
        self.fleet.event("start", now_ns(), self.name, self.inc)

    def pid(self):
        p = self.proc
        return p.pid if p and p.poll() is None else None

    def kill9(self):
        with self.lock:
            self.held = True
            pid = self.pid()
            if pid:
                os.kill(pid, signal.SIGKILL)
                self.proc.wait()
                self.fleet.event("stop", now_ns(), self.name, self.inc, "kill9")
            self.start_locked()
            self.held = False
        return "pid %s killed, incarnation %d started" % (pid, self.inc)

    def stop(self):
        with self.lock:
            self.held = True
            p = self.proc
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                self.fleet.event("stop", now_ns(), self.name, self.inc, "term")


class Idmintd(Minter):
    def __init__(self, name, idmintd, sysmint, lease, node, coords, clock=False,
                 disk=False, policy="logical", rate=1000, batch=100, stores=None):
        super().__init__(name, coords + (["tickets"] if stores else []), node, clock, disk)
        self.idmintd = idmintd
        self.sysmint = sysmint
        self.lease = lease
        self.policy = policy
        self.stores = stores
        self.rate = rate
        self.batch = batch
        self.port = free_port()
        self.clients = []

    def argv(self):
        a = [self.idmintd, "--listen", "127.0.0.1:%d" % self.port, "--data-dir", self.dir,
             "--lease", self.lease, "--lease-ttl", str(TTL_MS), "--node",
             "datacenter=%d" % self.node, "--policy", self.policy, "--threads", "4",
             "--count-max", "4096"]
        if self.clock:
            a += ["--clock", "offset-file:" + self.clock_file]
        if self.stores:
            a += ["--store", self.stores, "--store-timeout", "1000"]
        return a

    def start_locked(self):
        # The incarnation file first: an answer read after it changed is
        # the new incarnation's (the old one is dead by then).
        self.inc_file = os.path.join(self.fleet.work, "inc-" + self.name)
        with open(self.inc_file + ".tmp", "w") as f:
            f.write("%d\n" % (self.inc + 1))
        os.rename(self.inc_file + ".tmp", self.inc_file)
        super().start_locked()
        if not self.clients:
            self.client(self.name, "/v1/snowflake", "snowflake", self.rate, self.batch)

    def client(self, name, path, kind, rate, batch):
        f = self.fleet
        a = [self.sysmint, "http", "--name", name, "--logdir", f.logdir, "--inc-file",
             self.inc_file, "--url", "http://127.0.0.1:%d" % self.port, "--path", path,
             "--kind", kind, "--rate", str(rate), "--batch", str(batch),
             "--seed", str(f.rng.randrange(1, 1 << 62))]
        if self.clock:
            a += ["--clock-name", self.clock]
        out = open(os.path.join(f.logdir, name + "-client.stderr"), "a")
        self.clients.append(subprocess.Popen(a, stdout=out, stderr=out))

    def ticket_client(self, rate):
        self.client(self.name + "-tickets", "/v1/segment/fleet", "ticket", rate, 300)

    def stop(self):
        for c in self.clients:
            c.terminate()
        for c in self.clients:
            c.wait()
        super().stop()


class Lib(Minter):
    def __init__(self, name, sysmint, lease, node, coords, clock=False, disk=False,
                 rate=1000, batch=100):
        super().__init__(name, coords, node, clock, disk)
        self.sysmint = sysmint
        self.lease = lease
        self.rate = rate
        self.batch = batch

    def argv(self):
        f = self.fleet
        a = [self.sysmint, "lib", "--name", self.name, "--logdir", f.logdir,
             "--incarnation", str(self.inc), "--url", self.lease, "--state-dir",
             os.path.join(self.dir, "state"), "--node", "datacenter=%d" % self.node,
             "--ttl", str(TTL_MS), "--rate", str(self.rate), "--batch", str(self.batch),
             "--seed", str(f.rng.randrange(1, 1 << 62))]
        if self.clock:
            a += ["--clock-file", self.clock_file, "--clock-name", self.clock]
        return a


class Cli(Minter):
    """`idmint next --lease` runs, one after another, by a sysmint cli loop;
    the minter (the target of kill -9 and SIGSTOP) is the running child."""

    def __init__(self, name, sysmint, idmint, lease, node, coords, count=1000):
        super().__init__(name, coords, node)
        self.sysmint = sysmint
        self.idmint = idmint
        self.lease = lease
        self.count = count

    def argv(self):
        f = self.fleet
        self.pid_file = os.path.join(self.dir, "child.pid")
        return [self.sysmint, "cli", "--name", self.name, "--logdir", f.logdir,
                "--incarnation", str(self.inc * 100000 + 1), "--idmint", self.idmint,
                "--count", str(self.count), "--pid-file", self.pid_file, "--pause", "100",
                "--", "--lease", self.lease, "--lease-ttl", str(TTL_MS), "--node",
                "datacenter=%d" % self.node]

    def env(self):
        e = super().env()
        e["IDMINT_STATE_DIR"] = os.path.join(self.dir, "state")
        return e

    def pid(self):
        try:
            with open(self.pid_file) as fh:
                pid = int(fh.read().strip() or 0)
        except (OSError, ValueError):
            return None
        return pid or None

    def kill9(self):
        pid = self.pid()
        for _ in range(40):            # between two runs: wait for the next
            if pid:
                break
            time.sleep(0.025)
            pid = self.pid()
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pid = None
        return "run pid %s killed; the loop starts the next run" % pid


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build directory")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=90, help="how long the nemesis runs")
    ap.add_argument("--min-ids", type=int, default=1000000)
    ap.add_argument("--min-faults", type=int, default=len(KINDS))
    ap.add_argument("--rate", type=int, default=4000, help="ids a second per client")
    ap.add_argument("--workdir", help="default: a new temp dir, removed unless --keep")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--report", help="also write the checker's report to this file")
    ap.add_argument("--rogue", action="store_true",
                    help="no nemesis; add a minter leasing from a coordinator of its own "
                    "for the file directory's datacenter (two coordinators for one id "
                    "space), and pass only if the checker finds the duplicates and "
                    "overlaps that makes: the suite can see a broken fleet")
    args = ap.parse_args()

    fleet = Fleet(args)
    sup = None
    status = 2
    try:
        t0 = now_ns()
        say("seed %d, %.0f s, work dir %s" % (args.seed, args.seconds, fleet.work))
        fleet.event("run", t0, t0, args.seed, "%.0f" % args.seconds)
        fleet.setup()
        sup = threading.Thread(target=fleet.supervise, daemon=True)
        sup.start()
        fleet.hold(3)                       # every minter minting
        if args.rogue:
            fleet.hold(args.seconds)
        else:
            fleet.nemesis(args.seconds, args.min_faults)
        fleet.hold(2 * TTL_MS / 1000 + 2)   # the last fault's recovery
        fleet.stop_all()
        fleet.event("run", t0, now_ns(), args.seed, "%.0f" % args.seconds)
        fleet.events.close()
        rc, figures, text = fleet.check()
        sys.stdout.write(text)
        if args.report:
            with open(args.report, "w") as f:
                f.write("seed %d, %.0f s\n" % (args.seed, args.seconds))
                f.write(text)
        status = 0 if rc == 0 else 1
        if args.rogue:
            found = figures and figures.get("duplicates", 0) > 0 and figures.get("overlaps", 0) > 0
            say("rogue minter: the checker %s" % ("found its duplicates and overlaps" if found
                                                 else "MISSED its duplicates or overlaps"))
            status = 0 if rc == 1 and found else 1
            fleet.faults = {}
        ids = 0
        if figures:
            ids = sum(v for k, v in figures.get("ids", {}).items()) \
                if isinstance(figures.get("ids"), dict) else figures.get("ids", 0)
        # A fleet that heals itself: every process a fault affected minted
        # again afterwards (the run ends two TTLs after the last fault).
        stuck = {k: v.get("not_recovered", 0)
                 for k, v in (figures or {}).get("recovery_ms", {}).items()}
        if any(stuck.values()):
            say("FAILED: processes that never minted again after a fault: %s" %
                ", ".join("%s %d" % kv for kv in stuck.items() if kv[1]))
            status = 1
        missing = [k for k, n in fleet.faults.items() if n == 0]
        total = sum(fleet.faults.values())
        if missing:
            say("FAILED: fault kinds never injected: %s" % " ".join(missing))
            status = 1
        if total < args.min_faults:
            say("FAILED: %d faults, fewer than %d" % (total, args.min_faults))
            status = 1
        if ids < args.min_ids:
            say("FAILED: %d ids checked, fewer than %d" % (ids, args.min_ids))
            status = 1
        say("%s: %d ids, %d faults (%s)" % ("passed" if status == 0 else "FAILED", ids, total,
                                           ", ".join("%s %d" % kv for kv in fleet.faults.items())))
    except Exception as e:  # the fleet could not be set up or run
        say("error: %s" % e)
        status = 2
    finally:
        if not fleet.stopping:
            try:
                fleet.stop_all()
            except Exception as e:
                say("while stopping: %s" % e)
        fleet.stop_servers()
        if status == 0 and not args.keep and not args.workdir:
            shutil.rmtree(fleet.work, ignore_errors=True)
        else:
            say("logs kept in %s" % fleet.work)
    return status


if __name__ == "__main__":
    sys.exit(main())
