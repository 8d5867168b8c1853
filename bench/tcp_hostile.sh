#!/bin/bash
# A legitimate bench tcp client's rate with and without hostile peers hammering the
# same server (issue 21). Loopback only: the server binds 127.0.0.1, every peer is local.
#
# Phases: baseline (no attack), attack (the hostile set below runs the whole phase),
# baseline again (the machine's own drift). Each phase runs the legitimate client RUNS
# times and prints its rate per run, the median, and the runs that failed.
#
# The hostile set (python3, bounded: at most 60 sockets at once besides a flood's 200,
# ~20 new connections a second, DURATION s at most): 50 idle connections (reopened when the server drops
# them), 3 slowloris hellos at 1 byte/s, a hello with timeout_s 1e-7 that then hangs,
# and a stream of proposals: channels = sockets = 2^31, 2^32+1 channels, 64 GiB in
# 1-byte chunks, 16 GiB with --verify --reverse, wrong JSON types, bad magic and
# version, connect-and-close probes, valid parameters without the secret and with a
# wrong one, and (issue 32) hellos and parameters nested 30,000 deep, 30,000 values wide,
# or with a 60 KB string; and (issue 32, the rest of its stranger's set) a flood of 200
# slow connections at once every 20 s, connections reset at once (SO_LINGER 0), hellos
# followed by a half-close, a header announcing a 4 GiB frame, a frame of an unknown type,
# and parameters with a replayed proof (one fixed, well-formed HMAC). AUTH=token (default): the server runs with P2PSCOPE_TOKEN set (the
# legitimate client has it, the attacker does not), as the README advises for a shared
# network. AUTH=open: no secret, and the attacker sends no valid parameters (a client
# the server accepts owns the session until its --timeout, by design).
#
# Usage: bench/tcp_hostile.sh [RUNS]   (P2PSCOPE=path/to/p2pscope, default build/p2pscope)
#   SIZE=64M ITERS=4 CHANNELS=2 (the legitimate client's run)  DURATION=120 (attack cap, s)
#   AUTH=token|open  SERVER_ARGS="--max-memory 256M"
set -euo pipefail
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
RUNS=${1:-5}
SIZE=${SIZE:-64M}
ITERS=${ITERS:-4}
CHANNELS=${CHANNELS:-2}
DURATION=${DURATION:-120}
SERVER_ARGS=${SERVER_ARGS---max-memory 256M}  # empty for a binary older than --max-memory
AUTH=${AUTH:-token}  # token: P2PSCOPE_TOKEN on server and client; open: none (the server's default)
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE (make build, or set P2PSCOPE)"; exit 2; }
tmp=$(mktemp -d)
server_pid= attack_pid=
cleanup() {
  [ -n "$attack_pid" ] && kill "$attack_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [ "$AUTH" = token ]; then export P2PSCOPE_TOKEN="bench-$$-$RANDOM$RANDOM"; else unset P2PSCOPE_TOKEN; fi
"$P2PSCOPE" bench tcp --server --bind 127.0.0.1 --port "$port" $SERVER_ARGS 2> "$tmp/server.log" > /dev/null &
server_pid=$!
for _ in $(seq 100); do  # until it listens
  python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2).close()" 2>/dev/null && break
  sleep 0.05
done

# One legitimate run: its client-side rate in GB/s, or "fail: reason".
legit() {
  if "$P2PSCOPE" bench tcp --client 127.0.0.1 --port "$port" --size "$SIZE" --iters "$ITERS" --warmup 1 \
      --channels "$CHANNELS" --timeout 10 --format json > "$tmp/r.json" 2> "$tmp/r.err"; then
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.3f" % (r["client"]["tx_bytes_per_s"]/1e9))' "$tmp/r.json"
  else
    echo "fail: $(tail -1 "$tmp/r.err" | cut -c1-120)"
  fi
}

phase() {  # name: runs the legitimate client RUNS times, prints a table row
  local rates=() fails=() r
  for _ in $(seq "$RUNS"); do
    r=$(legit)
    if [[ $r == fail:* ]]; then fails+=("$r"); else rates+=("$r"); fi
  done
  local med="-"
  [ ${#rates[@]} -gt 0 ] && med=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
  echo "| $1 | ${#rates[@]}/$RUNS | $med | ${rates[*]:-} | ${fails[*]:-} |"
}

cat > "$tmp/attack.py" <<'PY'
import json, random, select, signal, socket, struct, sys, time
port, duration, stats_path, auth = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
MAGIC, VER = 0x50325453, 4  # include/p2pscope/tcp.hpp: kProtocolMagic, kProtocolVersion
def frame(t, body, magic=MAGIC, ver=VER):
    b = body if isinstance(body, bytes) else json.dumps(body).encode()
    return struct.pack("<IIII", magic, ver, t, len(b)) + b
def params(**kw):
    p = {"mode": "bw", "mem": "host", "channels": 1, "sockets_per_channel": 1, "window": 4,
         "size_bytes": 1 << 20, "chunk_bytes": 1 << 20, "iters": 1, "warmup": 0, "gpus": [0],
         "verify": False, "reverse": False, "nodelay": True, "sockbuf_bytes": 0, "timeout_s": 10,
         "transport": "sockets"}
    p.update(kw)
    return p
HELLO = frame(1, {"nonce": "00" * 16})
# Frames that crashed the old parser's callers (issue 32): nested 30,000 deep (60 KB, under
# the 64 KiB a frame may have before a session), as a hello and as parameters; a frame of
# 40,000 values; a string of 60 KB.
DEEP = b"[" * 30000 + b"]" * 30000
DEEP_HELLO = frame(1, b'{"nonce":"' + b"0" * 32 + b'","x":' + DEEP + b"}")
DEEP_PARAMS = frame(10, b'{"proof":"","params":' + DEEP + b"}")
WIDE = frame(1, b'{"nonce":"00","x":[' + b"0," * 30000 + b"0]}")
LONG = frame(1, b'{"nonce":"' + b"a" * 60000 + b'"}')
HUGE_HEADER = struct.pack("<IIII", MAGIC, VER, 1, 0xFFFFFFFF) + b"{"  # announces 4 GiB, sends a byte
UNKNOWN_TYPE = frame(77, {"nonce": "00" * 16})
REPLAYED = frame(10, {"proof": "5a" * 32, "params": params()})  # the same well-formed proof every time
# Proposals: a hello, then (after the challenge) params; the server must refuse each.
proposals = [params(channels=2**31, sockets_per_channel=2**31), params(channels=2**32 + 1),
             params(size_bytes=64 << 30, chunk_bytes=1), params(size_bytes=16 << 30, verify=True, reverse=True),
             params(channels="two"), params(gpus="0"), params(mode=3), params(timeout_s=1e-7)]
# Valid parameters are refused only by the secret: without one the server would accept
# them, and a client that is accepted owns the session until its --timeout (by design).
odd_frames = [HUGE_HEADER, UNKNOWN_TYPE]
# Valid parameters with a replayed proof: refused by the secret; an open server would
# rightly accept them (and be held until the data connections' deadline, see above).
if auth == "token": proposals.append(params()); odd_frames.append(HELLO + REPLAYED)
stats = {"connections": 0, "rejects": 0, "closed_by_server": 0}
t_start = time.time()
def finish(*_):
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    stats["seconds"] = round(time.time() - t_start, 1); stats["attacker_cpu_s"] = round(ru.ru_utime + ru.ru_stime, 2)
    json.dump(stats, open(stats_path, "w")); sys.exit(0)
signal.signal(signal.SIGTERM, finish)
socks = {}  # fd -> [sock, kind, state, next_send_time, payload]
recent = []  # connection times: at most 40 a second, whatever the server does
def connect(kind, payload=b"", flood=False):
    now = time.time()
    while recent and recent[0] < now - 1: recent.pop(0)
    if not flood and (len(socks) >= 60 or len(recent) >= 40): return
    if flood and len(socks) >= 260: return  # the flood's 200 on top of the steady set
    recent.append(now)
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    except OSError: s.close(); return
    socks[s.fileno()] = [s, kind, 0, time.time(), payload]
    stats["connections"] += 1
for _ in range(50): connect("idle")
for _ in range(3): connect("slow", HELLO)
connect("hang", frame(1, {"nonce": "00" * 16, "params": params(timeout_s=1e-7)}))
t_end = time.time() + duration; next_new = time.time(); next_flood = time.time() + 1
stats["floods"] = 0
while time.time() < t_end:
    now = time.time()
    if now >= next_flood:  # 200 slow hellos at once, each trickling a byte a second
        next_flood = now + 20; stats["floods"] += 1
        for _ in range(200): connect("slow", HELLO, flood=True)
    if now >= next_new:  # ~20 new hostile connections a second
        next_new = now + 0.05
        r = random.random()
        if r < 0.5: connect("propose", random.choice(proposals))
        elif r < 0.6: connect("raw", frame(1, {"nonce": 42}))
        elif r < 0.7: connect("raw", frame(1, {"nonce": "00"}, magic=0x48545450))
        elif r < 0.8: connect("raw", frame(1, {"nonce": "00"}, ver=99))
        elif r < 0.85: connect("raw", frame(10, {"proof": "00" * 32, "params": params()}))
        elif r < 0.9: connect("raw", random.choice([DEEP_HELLO, DEEP_PARAMS, WIDE, LONG]))
        elif r < 0.93: connect("raw", random.choice(odd_frames))
        elif r < 0.96: connect("halfclose", HELLO)
        elif r < 0.98: connect("reset")
        else: connect("probe")
    for fd, (s, kind, state, t, payload) in list(socks.items()):
        try:
            if kind == "probe": s.close(); del socks[fd]; continue
            if kind == "reset":  # an RST instead of a FIN, before or during the accept
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s.close(); del socks[fd]; continue
            if kind == "halfclose" and state == 0:
                s.send(payload); s.shutdown(socket.SHUT_WR); socks[fd][2] = 1
            if kind == "slow" and now >= t and state < len(payload):
                s.send(payload[state:state + 1]); socks[fd][2] += 1; socks[fd][3] = now + 1.0
            elif kind in ("raw", "hang") and state == 0:
                s.send(payload); socks[fd][2] = 1
            elif kind == "propose" and state == 0:
                s.send(HELLO); socks[fd][2] = 1
        except (BlockingIOError, InterruptedError): pass
        except OSError: s.close(); del socks[fd]
    kinds = [v[1] for v in socks.values()]
    for kind, want in (("idle", 50), ("slow", 3)):
        for _ in range(want - kinds.count(kind)): connect(kind, HELLO if kind == "slow" else b"")
    fds = [v[0] for v in socks.values()]
    if not fds: time.sleep(0.01); continue
    readable, _, _ = select.select(fds, [], [], 0.02)
    for s in readable:
        fd = s.fileno(); ent = socks.get(fd)
        if ent is None: continue
        try: data = s.recv(65536)
        except (BlockingIOError, InterruptedError): continue
        except OSError: data = b""
        if not data:
            stats["closed_by_server"] += 1; s.close(); del socks[fd]
            continue
        if len(data) >= 16:
            t = struct.unpack("<IIII", data[:16])[2]
            if t == 3: stats["rejects"] += 1
            if t == 9 and ent[1] == "propose" and ent[2] == 1:  # challenge: send params without the secret
                try: s.send(frame(10, {"proof": "", "params": ent[4]})); ent[2] = 2
                except OSError: pass
finish()
PY

echo "# AUTH=$AUTH; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); legitimate client: --size $SIZE --iters $ITERS --warmup 1 --channels $CHANNELS, host memory, 127.0.0.1; $RUNS runs a phase"
echo "| phase | runs ok | median GB/s | GB/s per run | failures |"
echo "|---|---:|---:|---|---|"
phase "no attack"
python3 "$tmp/attack.py" "$port" "$DURATION" "$tmp/attack.json" "$AUTH" &
attack_pid=$!
sleep 2  # the idle and slow connections are in place
phase "under attack"
kill "$attack_pid" 2>/dev/null || true; wait "$attack_pid" 2>/dev/null || true; attack_pid=
phase "no attack (after)"
echo
echo "attacker: $(cat "$tmp/attack.json" 2>/dev/null || echo 'stopped before writing its counts (killed at the end of the phase)')"
echo "server log: $(grep -c 'refused' "$tmp/server.log" || true) refusals; by reason:"
sed -n 's/.*refused [0-9.:]*: //p' "$tmp/server.log" | cut -c1-60 | sort | uniq -c | sort -rn | head -12 | sed 's/^/    /'
kill -0 "$server_pid" 2>/dev/null && echo "server: still running after the attack, peak memory $(awk '/VmHWM/ {print $2, $3}' /proc/$server_pid/status)" || echo "server: DIED"
