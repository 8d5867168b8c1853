#!/usr/bin/env python3
"""A live bench tcp / bench net server under mutation fuzzing (issue 43 item 1).

The libFuzzer targets (scripts/run-fuzzers.sh) feed one parser at a time. This runs the
real server binary, in one output format, and throws mutated sessions at it for a bounded
time, netfuzz-style: a legitimate client's control and data streams are recorded once
through a relay, then replayed with frames mutated (their JSON values made invalid UTF-8,
control characters, cut strings, huge or negative numbers, wrong types, deep nesting;
headers with wrong magic, version, type or length; bytes flipped, cut, doubled). The
replay follows the server: the session id it hands out is put into the data hellos
before they are mutated, so mutations reach the data connections and the round frames,
not only the door.

Between rounds of fuzzing and at the end, a legitimate client must still be served. The
server's open descriptors and resident memory are read from /proc after the first
legitimate session and at the end: they must stay flat.

Usage: bench/server_fuzz.py --binary build/p2pscope --engine tcp|net [--plugin SO]
         --format text|json|csv --seconds N [--seed S] [--check-every S]
Prints one summary line (and JSON with --json-out FILE); exit 0 when the server lived,
served every legitimate client and stayed flat, 1 otherwise, 2 on bad usage.
"""
import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

MAGIC, VERSION = 0x50325453, 5
HDR = struct.Struct("<4I")
NASTY_STRINGS = [b"\xc3", b"\xff\xfe", b"\xe2\x82", b"\x1b[2J\x1b]0;pwn\x07", b"\x00", b"\xed\xa0\x80",
                 b"\xf4\x90\x80\x80", b"\xc0\xaf", "é".encode() * 3000, b"A" * 70000, b"\\ud800", b"\\u0000"]
NASTY_VALUES = [b"-1", b"0", b"4294967296", b"18446744073709551616", b"1e308", b"-1e308", b"NaN", b"null", b"true",
                b"[]", b"{}", b"\"\"", b"[" * 5000 + b"]" * 5000, b"3.5", b"-0", b"99999999999999999999999"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def frames_of(stream):
    """Splits a recorded client->server byte stream into [header+body] frames; the rest
    (a data connection's chunks after its hello) is one opaque tail."""
    out, i = [], 0
    while i + HDR.size <= len(stream):
        magic, version, ftype, length = HDR.unpack_from(stream, i)
        if magic != MAGIC or ftype > 11 or length > 1 << 20 or i + HDR.size + length > len(stream):
            break
        out.append(stream[i:i + HDR.size + length])
        i += HDR.size + length
    return out, stream[i:]


def json_mutation(body, rng):
    """The body's JSON text with one value, key or structure made hostile (raw bytes
    spliced where a string or a value stands, so invalid UTF-8 reaches the parser)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):  # already mutated past JSON, or nested past Python's stack
        return byte_mutation(body, rng)
    marker = "\u2603MUT\u2603"
    paths = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append(path + [k])
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                paths.append(path + [i])
                walk(v, path + [i])
    walk(doc, [])
    choice = rng.random()
    if not paths or choice < 0.1:  # a hostile extra key
        if isinstance(doc, dict):
            doc[marker + "K"] = 1
            text = json.dumps(doc).encode()
            return text.replace(json.dumps(marker + "K").encode(), b"\"" + rng.choice(NASTY_STRINGS) + b"\"")
        return rng.choice(NASTY_VALUES)
    path = rng.choice(paths)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if choice < 0.2:  # a key lost
        if isinstance(parent, dict):
            del parent[path[-1]]
        return json.dumps(doc).encode()
    parent[path[-1]] = marker
    text = json.dumps(doc).encode()
    if choice < 0.6:  # a string of hostile bytes, or a real string cut mid-character
        repl = b"\"" + rng.choice(NASTY_STRINGS) + b"\""
    else:  # a value of another type or out of range
        repl = rng.choice(NASTY_VALUES)
    return text.replace(json.dumps(marker).encode(), repl)


def byte_mutation(data, rng):
    data = bytearray(data)
    kind = rng.randrange(5)
    if not data or kind == 0:
        data += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 32)))
    elif kind == 1:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 2:
        del data[rng.randrange(len(data)):]
    elif kind == 3:
        i = rng.randrange(len(data))
        data[i:i] = data[i:i + rng.randint(1, 64)]
    else:
        i = rng.randrange(len(data))
        del data[i:i + rng.randint(1, 16)]
    return bytes(data)


def mutate_frame(frame, rng):
    magic, version, ftype, length = HDR.unpack_from(frame, 0)
    body = frame[HDR.size:]
    r = rng.random()
    if r < 0.55:
        body = json_mutation(body, rng)
        return HDR.pack(magic, version, ftype, len(body)) + body
    if r < 0.7:  # the header lies
        field = rng.randrange(4)
        vals = [magic, version, ftype, len(body)]
        vals[field] = rng.choice([0, 1, 4, 5, 6, 11, 12, 255, 0xFFFFFFFF, 1 << 20, (1 << 20) + 1, length + 1,
                                  max(0, length - 1), rng.getrandbits(32)])
        return HDR.pack(*vals) + body
    if r < 0.8:  # a frame of another type with this body
        return HDR.pack(magic, version, rng.randint(0, 12), len(body)) + body
    return byte_mutation(frame, rng)


class Relay:
    """Records what a legitimate client sends on each connection it opens to the server."""

    def __init__(self, target_port):
        self.target = target_port
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        self.streams, self.lock, self.stop = [], threading.Lock(), False
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        self.srv.settimeout(0.2)
        while not self.stop:
            try:
                c, _ = self.srv.accept()
            except OSError:
                continue
            s = socket.create_connection(("127.0.0.1", self.target))
            rec = bytearray()
            with self.lock:
                self.streams.append(rec)
            threading.Thread(target=self.pump, args=(c, s, rec), daemon=True).start()
            threading.Thread(target=self.pump, args=(s, c, None), daemon=True).start()

    @staticmethod
    def pump(a, b, rec):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if rec is not None and len(rec) < 4 << 20:
                    rec += d[: (4 << 20) - len(rec)]
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def read_frames(sock, wait_s):
    """What the server answered within wait_s: [(type, body)], stopping at a close."""
    sock.settimeout(wait_s)
    buf, out = b"", []
    try:
        while True:
            d = sock.recv(65536)
            if not d:
                break
            buf += d
            while len(buf) >= HDR.size:
                _, _, ftype, length = HDR.unpack_from(buf, 0)
                if length > 1 << 22 or len(buf) < HDR.size + length:
                    break
                out.append((ftype, buf[HDR.size:HDR.size + length]))
                buf = buf[HDR.size + length:]
    except OSError:
        pass
    return out


def session_of(replies):
    for ftype, body in replies:
        if ftype == 2:  # accept
            try:
                return json.loads(body).get("session")
            except ValueError:
                return None
    return None


def one_attack(port, control, data, rng, stats):
    """One mutated session: the control frames sent one by one (a mutation in one or
    more of them), the server's answers read; data connections opened with the session
    id the server gave, their hellos or chunks mutated too."""
    frames, _ = frames_of(control)
    if not frames:
        return
    hit = {rng.randrange(len(frames)) for _ in range(rng.choice([1, 1, 1, 2, 3]))}
    cut_at = rng.randrange(len(frames) + 1) if rng.random() < 0.3 else len(frames)
    socks = []
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=2)
        socks.append(c)
        session = None
        for i, f in enumerate(frames[:cut_at]):
            out = mutate_frame(f, rng) if i in hit else f
            c.sendall(out)
            stats["frames"] += 1
            replies = read_frames(c, 0.05 if i + 1 < len(frames) else 0.3)
            stats["replies"] += len(replies)
            for ftype, _ in replies:  # how deep the mutations reached
                name = {2: "accepts", 3: "rejects", 6: "dones", 7: "results", 8: "errors"}.get(ftype)
                if name:
                    stats[name] += 1
            session = session or session_of(replies)
            if session and data and i == 1:  # after the parameters: the data links, as the client opens them
                for stream in data:
                    hello, tail = frames_of(stream)
                    if not hello:
                        continue
                    try:
                        body = json.loads(hello[0][HDR.size:])
                        body["session"] = session
                        b = json.dumps(body).encode()
                        h = HDR.pack(MAGIC, VERSION, 4, len(b)) + b
                    except ValueError:
                        h = hello[0]
                    if rng.random() < 0.3:
                        h = mutate_frame(h, rng)
                    elif rng.random() < 0.3 and tail:
                        tail = byte_mutation(tail[:65536], rng)
                    d = socket.create_connection(("127.0.0.1", port), timeout=2)
                    socks.append(d)
                    # Mostly the whole recorded stream, so that sessions run their rounds
                    # and reach the results; sometimes a link that stops short.
                    d.sendall(h + tail[:rng.choice([len(tail)] * 4 + [0, 16, 4096])])
                    stats["data_links"] += 1
    except OSError:
        stats["refused"] += 1
    finally:
        for s in socks:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
            except OSError:
                pass
    stats["sessions"] += 1


def proc_figures(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return fds, rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/p2pscope")
    ap.add_argument("--engine", choices=["tcp", "net"], default="tcp")
    ap.add_argument("--plugin", default="", help="bench net: the plugin (default: the build's reference plugin)")
    ap.add_argument("--format", choices=["text", "json", "csv"], default="text")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--check-every", type=float, default=20, help="seconds between legitimate clients")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json-out", default="")
    ap.add_argument("--rss-slack-mb", type=float, default=32)
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        print(f"server_fuzz: no p2pscope binary at {a.binary}", file=sys.stderr)
        return 2
    plugin = a.plugin or os.path.join(os.path.dirname(os.path.abspath(a.binary)), "lib", "libnccl-net-p2pscope.so")
    if a.engine == "net" and not os.path.exists(plugin):
        print(f"server_fuzz: no plugin at {plugin} (--plugin)", file=sys.stderr)
        return 2
    rng = random.Random(a.seed)
    env = dict(os.environ, P2PSCOPE_REFNET_IFS="lo")
    env.pop("P2PSCOPE_TOKEN", None)
    port = free_port()
    engine = ["bench", a.engine] + (["--plugin", plugin] if a.engine == "net" else [])
    work = tempfile.mkdtemp(prefix="p2pscope-fuzz-")
    out_path, err_path = os.path.join(work, "server.out"), os.path.join(work, "server.err")
    server = subprocess.Popen([a.binary] + engine + ["--server", "--bind", "127.0.0.1", "-p", str(port), "--format",
                                                     a.format, "--max-memory", "256M"],
                              stdout=open(out_path, "wb"), stderr=open(err_path, "wb"), env=env)
    legit = [a.binary] + engine + ["-c", "127.0.0.1", "--size", "1M", "--chunk", "256K", "--iters", "2",
                                   "--channels", "2"]

    def run_legit(p, tries=20, timeout="5"):
        for _ in range(tries):  # the server may still be closing a fuzzed session ("busy")
            r = subprocess.run(legit + ["-p", str(p), "--timeout", timeout], env=env, capture_output=True, timeout=60)
            if r.returncode == 0:
                return True, ""
            time.sleep(0.5)
        return False, r.stderr.decode(errors="replace")[-400:]

    stats = dict(sessions=0, frames=0, replies=0, data_links=0, refused=0, checks=0, failed_checks=0, accepts=0,
                 rejects=0, dones=0, results=0, errors=0)
    verdict, why = "ok", []
    try:
        deadline = time.time() + 10
        while time.time() < deadline and b"listening on port" not in open(err_path, "rb").read():
            time.sleep(0.05)
        relay = Relay(port)
        # Recorded at --timeout 1: the replayed parameters carry it, so a fuzzed session
        # that stalls holds the server (and turns the next attacks away as busy) for a
        # second, not ten.
        ok, err = run_legit(relay.port, timeout="1")
        relay.stop = True
        if not ok:
            print(f"server_fuzz: the legitimate client failed before any fuzzing: {err}", file=sys.stderr)
            return 2
        control, data = bytes(relay.streams[0]), [bytes(s) for s in relay.streams[1:]]
        fds0, rss0 = proc_figures(server.pid)
        rss_max, t0, next_check = rss0, time.time(), time.time() + a.check_every
        while time.time() - t0 < a.seconds and server.poll() is None:
            one_attack(port, control, data if a.engine == "tcp" else [], rng, stats)
            rss_max = max(rss_max, proc_figures(server.pid)[1])
            if time.time() >= next_check:
                ok, err = run_legit(port)
                stats["checks"] += 1
                if not ok:
                    stats["failed_checks"] += 1
                    why.append("a legitimate client was refused mid-run: " + err)
                next_check = time.time() + a.check_every
        if server.poll() is not None:
            verdict = "died"
            why.append(f"the server exited {server.returncode}: " + open(err_path, "rb").read()[-600:].decode(
                errors="replace"))
        else:
            time.sleep(1)
            ok, err = run_legit(port)
            stats["checks"] += 1
            if not ok:
                stats["failed_checks"] += 1
                verdict = "refused"
                why.append("the legitimate client after the fuzzing failed: " + err)
            # A handshake the last attacks left half-done is the server's until its hello
            # timeout (5 s): descriptors count as grown only if they stay above the start.
            for _ in range(60):
                fds1, rss1 = proc_figures(server.pid)
                if fds1 <= fds0:
                    break
                time.sleep(0.1)
            stats.update(fds_before=fds0, fds_after=fds1, rss_before_mb=round(rss0 / 2**20, 1),
                         rss_max_mb=round(rss_max / 2**20, 1), rss_after_mb=round(rss1 / 2**20, 1))
            if fds1 > fds0:
                verdict = "leak"
                why.append(f"open descriptors grew from {fds0} to {fds1}")
            if rss1 - rss0 > a.rss_slack_mb * 2**20:
                verdict = "leak"
                why.append(f"resident memory grew from {rss0 / 2**20:.1f} to {rss1 / 2**20:.1f} MiB")
            if stats["failed_checks"] and verdict == "ok":
                verdict = "refused"
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
    out = open(out_path, "rb").read()
    try:
        out.decode("utf-8")
    except UnicodeDecodeError as e:
        verdict = "bad-output"
        why.append(f"the server's {a.format} output is not UTF-8 at byte {e.start}")
    if any(b < 0x20 and b not in (9, 10, 13) for b in out):
        verdict = "bad-output"
        why.append("the server printed a control character a peer sent")
    stats.update(engine=a.engine, format=a.format, seconds=a.seconds, seed=a.seed, verdict=verdict, why=why,
                 output_bytes=len(out))
    print(f"server_fuzz {a.engine} {a.format} {a.seconds:.0f}s seed {a.seed}: {verdict}; {stats['sessions']} sessions, "
          f"{stats['frames']} frames ({stats['rejects']} rejected, {stats['accepts']} accepted, {stats['dones']} rounds done, "
          f"{stats['results']} results, {stats['errors']} errors), {stats['data_links']} data links, "
          f"{stats['checks']} legitimate clients "
          f"({stats['failed_checks']} failed); fds {stats.get('fds_before')} -> {stats.get('fds_after')}, RSS "
          f"{stats.get('rss_before_mb')} -> {stats.get('rss_after_mb')} MiB (max {stats.get('rss_max_mb')})"
          + "".join("\n  " + w for w in why))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(stats, f, indent=1)
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
