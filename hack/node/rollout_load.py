"""Steady load during a rolling update, and a webhook receiver counting what arrives.

Reports calls on the platform ingestion API and reads GET /v1/me on the public API, RATE
times a second, and GET /v1/me once a second, until STOP exists; then waits for every accepted call's call.ended
delivery and prints a JSON summary. The receiver (HTTPS, for the cert given) answers 204.
"""
import http.server, json, os, re, ssl, sys, threading, time, urllib.error, urllib.request
from datetime import datetime, timezone

(bind, port, cert, certkey, platform, token, api, key, number, stop, out) = sys.argv[1:12]
RATE = 20
lock = threading.Lock()
received = []  # (delivery id, webhook-id, monotonic time, body)
reported = {}  # call id -> monotonic time of the report
answers = {"platform": {}, "api": {}}


class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            received.append((self.headers.get("X-Service-Delivery"), self.headers.get("webhook-id"),
                             time.monotonic(), body.decode()))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer((bind, int(port)), Receiver)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, certkey)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
threading.Thread(target=srv.serve_forever, daemon=True).start()


def count(kind, code):
    with lock:
        answers[kind][code] = answers[kind].get(code, 0) + 1


def request(kind, req):
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception as e:  # refused, reset, timed out: not an answer at all
        return type(e).__name__, b""


def report(i):
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = json.dumps({"platform_ref": f"rollout-{i}", "to": number, "from": "+44 7700 900123",
                       "disposition": "answered", "started_at": now, "duration_seconds": 60,
                       "talk_seconds": 50}).encode()
    req = urllib.request.Request(platform + "/platform/v1/calls", body, method="POST", headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    t = time.monotonic()
    code, out = request("platform", req)
    count("platform", code)
    if code in (200, 201):
        with lock:
            reported[json.loads(out)["call_public_id"]] = t


def read_me():
    code, _ = request("api", urllib.request.Request(api + "/v1/me", headers={"Authorization": "Bearer " + key}))
    count("api", code)


threads, i, start = [], 0, time.monotonic()
while not os.path.exists(stop):
    i += 1
    # GET /v1/me once a second: the key's rate limit allows about that steadily.
    for fn, arg in ((report, (i,)),) + (((read_me, ()),) if i % RATE == 0 else ()):
        th = threading.Thread(target=fn, args=arg)
        th.start()
        threads.append(th)
    time.sleep(max(0, start + i / RATE - time.monotonic()))
for th in threads:
    th.join()

deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    with lock:
        got = {c for c in reported for r in received if c in r[3]}
    if len(got) == len(reported):
        break
    time.sleep(1)

with lock:
    ids = [r[0] for r in received]
    delays, slow = [], []
    for c, t in reported.items():
        first = min((r[2] for r in received if c in r[3]), default=None)
        if first is not None:
            delays.append(first - t)
            if first - t > 2:
                slow.append({"call": c, "delay_s": round(first - t, 3), "reported_at": round(t - start, 3)})
    delays.sort()
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))] if delays else None
    summary = {
        "ticks": i, "reported": len(reported), "deliveries": len(received),
        "lost": len(reported) - len(delays),
        "duplicates": len(ids) - len(set(ids)),
        "webhook_id_mismatch": sum(1 for r in received if r[0] != r[1]),
        "p99_delay_s": round(p99, 3) if p99 is not None else None,
        "max_delay_s": round(delays[-1], 3) if delays else None,
        "slow": sorted(slow, key=lambda d: d["reported_at"]),
        "answers": {k: {str(c): n for c, n in v.items()} for k, v in answers.items()},
    }
json.dump(summary, open(out, "w"))
srv.shutdown()
