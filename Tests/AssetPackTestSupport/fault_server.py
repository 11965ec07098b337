#!/usr/bin/env python3
"""The fault-injecting HTTP/1.1 file server behind FaultyHTTPServer (see FaultyHTTPServer.swift).

Run by hand:

    python3 fault_server.py ROOT CONTROL.json LOG

It serves the directory ROOT on 127.0.0.1 at a free port, prints that port as the first line of
standard output, and serves until killed (SIGTERM) or until its parent process exits. Then, for
example: `curl -sv -r 0-99 http://127.0.0.1:PORT/some/file -o /dev/null; cat LOG`.

LOG gets one tab-separated line per request, written just after the response's last byte: method,
target, status (0: closed without an answer), body bytes sent, bytes sent in all, Range header or
"-" (the shape of the nginx access log the tests read).

CONTROL.json names the fault (FaultyHTTPServer writes it with an atomic rename). It is read again at
every request; a changed text restarts the request counts, and a missing file means no fault:

    {"mode": "none"}                              a correct server
    {"mode": "truncate", "afterBytes": N, "times": T}  ranged GETs 1..T close after N body bytes
    {"mode": "corrupt", "offset": N}              the byte at file offset N is XORed with 0xFF
    {"mode": "drop", "times": T}                  requests 1..T: closed without an answer
    {"mode": "status503", "times": T}             requests 1..T: 503 with Retry-After: 0
    {"mode": "ignoreRange"}                       Range ignored: 200, no Accept-Ranges
    {"mode": "changeETag", "requests": R}         after request R: another ETag and Last-Modified
    {"mode": "claimSize", "size": N}              every file claims N bytes (its bytes, then zeros)
    {"mode": "drip", "rate": N}                   bodies at N bytes per second
    {"mode": "stall", "afterBytes": N}            ranged GETs send N body bytes, then hold the connection
    {"mode": "cap", "cap": N}                     every 206 body at most N bytes, Content-Range to match
    {"mode": "capSlow", "cap": N, "rate": S}      as cap, each 206 sent after S seconds (a drip of whole answers)
    {"mode": "weak", "requests": R}               requests 1..R: weak ETag, If-Range never matches
    {"mode": "refuseIfRange"}                     If-Range never matches
    {"mode": "statusFor", "suffix": S, "status": N}  paths ending in S: status N, an error body
    {"mode": "encodeRanges", "requests": R}       after request R: 206 bodies gzipped, Content-Encoding: gzip
"""

import email.utils, gzip, http.server, json, os, re, signal, sys, threading, time, urllib.parse

signal.pthread_sigmask(signal.SIG_SETMASK, [])  # an inherited mask must not block SIGTERM

ROOT = os.path.realpath(sys.argv[1])
CONTROL, LOG = sys.argv[2], sys.argv[3]
lock = threading.Lock()
state = {"text": None, "fault": {"mode": "none"}, "requests": 0, "ranged": 0}
RANGE = re.compile(r"bytes=(\d*)-(\d*)", re.ASCII)
UNSATISFIABLE = "unsatisfiable"


def next_request(ranged_get):
    """The fault, this request's number since it was set, and the ranged GETs' number."""
    try:
        with open(CONTROL) as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    with lock:
        if text != state["text"]:
            state["text"] = text
            state["fault"] = json.loads(text) if text else {"mode": "none"}
            state["requests"] = state["ranged"] = 0
        state["requests"] += 1
        if ranged_get:
            state["ranged"] += 1
        return state["fault"], state["requests"], state["ranged"]


def clean(value):
    return value.replace("\\", "\\x5C").replace("\t", "\\x09").replace("\r", "\\x0D").replace("\n", "\\x0A")


def log(method, target, status, body, total, rng):
    fields = [clean(method), clean(target), str(status), str(body), str(total)]
    fields.append("-" if rng is None else clean(rng))
    with lock:
        with open(LOG, "a") as f:
            f.write("\t".join(fields) + "\n")


def parse_range(value, size):
    """(first, last) for one satisfiable range, UNSATISFIABLE, or None to ignore the header."""
    m = RANGE.fullmatch(value.strip())
    if m is None or (m.group(1) == "" and m.group(2) == ""):
        return None
    if m.group(1) == "":
        n = int(m.group(2))
        if n == 0 or size == 0:
            return UNSATISFIABLE
        return (max(0, size - n), size - 1)
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) else size - 1
    if first >= size or first > last:
        return UNSATISFIABLE
    return (first, min(last, size - 1))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.serve(True)

    def do_HEAD(self):
        self.serve(False)

    def resolve(self):
        rel = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        full = os.path.realpath(os.path.join(ROOT, rel))
        if full != ROOT and not full.startswith(ROOT + os.sep):
            return None
        return full if os.path.isfile(full) else None

    def serve(self, with_body):
        rng = self.headers.get("Range")
        fault, nth, nth_ranged = next_request(with_body and rng is not None)
        mode = fault.get("mode", "none")
        if mode == "drop" and nth <= fault["times"]:
            self.close_connection = True
            log(self.command, self.path, 0, 0, 0, rng)
            return
        if mode == "statusFor" and urllib.parse.urlsplit(self.path).path.endswith(fault["suffix"]):
            body = b"injected fault\n"
            self.respond(fault["status"], [("Content-Type", "text/plain")], body, with_body, rng)
            return
        if mode == "status503" and nth <= fault["times"]:
            body = b"503 Service Unavailable (injected fault)\n"
            self.respond(503, [("Content-Type", "text/plain"), ("Retry-After", "0")], body, with_body, rng)
            return
        path = self.resolve()
        if path is None:
            self.respond(404, [("Content-Type", "text/plain")], b"404 Not Found\n", with_body, rng)
            return
        st = os.stat(path)
        size, mtime = st.st_size, int(st.st_mtime)
        real_size = size
        if mode == "claimSize":
            size = fault["size"]
        if mode == "changeETag" and nth > fault["requests"]:
            mtime += 1
        etag = '"%x-%x"' % (mtime, size)
        weak = mode == "weak" and nth <= fault["requests"]
        refuse_if_range = weak or mode == "refuseIfRange"
        if weak:
            etag = "W/" + etag
        modified = email.utils.formatdate(mtime, usegmt=True)
        headers = [("Content-Type", "application/octet-stream"), ("Last-Modified", modified), ("ETag", etag)]
        if_match = self.headers.get("If-Match")
        tags = [t.strip() for t in (if_match or "").split(",")]
        if if_match is not None and if_match.strip() != "*" and etag not in tags:
            self.respond(412, [("Content-Type", "text/plain")], b"412 Precondition Failed\n", with_body, rng)
            return
        first, last, status = 0, size - 1, 200
        if rng is not None and mode != "ignoreRange" and self.if_range_matches(etag, modified, refuse_if_range):
            parsed = parse_range(rng, size)
            if parsed == UNSATISFIABLE:
                headers = [("Content-Type", "text/plain"), ("Content-Range", "bytes */%d" % size)]
                self.respond(416, headers, b"416 Range Not Satisfiable\n", with_body, rng)
                return
            if parsed is not None:
                first, last = parsed
                if mode in ("cap", "capSlow"):
                    last = min(last, first + fault["cap"] - 1)
                if mode == "capSlow":
                    time.sleep(fault["rate"])
                status = 206
                headers.append(("Content-Range", "bytes %d-%d/%d" % (first, last, size)))
        if status == 200 and mode != "ignoreRange":
            headers.append(("Accept-Ranges", "bytes"))
        if mode == "claimSize":
            self.respond_generated(status, headers, path, first, last, real_size, with_body, rng)
            return
        with open(path, "rb") as f:
            f.seek(first)
            data = bytearray(f.read(last - first + 1))
        if mode == "corrupt" and first <= fault["offset"] <= last and fault["offset"] - first < len(data):
            data[fault["offset"] - first] ^= 0xFF
        if mode == "encodeRanges" and status == 206 and nth > fault["requests"]:
            data = bytearray(gzip.compress(bytes(data)))
            headers.append(("Content-Encoding", "gzip"))
        limit = None
        if mode == "truncate" and with_body and rng is not None and nth_ranged <= fault["times"]:
            limit = fault["afterBytes"]
        pace = fault["rate"] if mode == "drip" else None
        hold = fault["afterBytes"] if mode == "stall" and rng is not None else None
        self.respond(status, headers, data, with_body, rng, limit, pace, hold)

    def respond_generated(self, status, headers, path, first, last, real_size, with_body, rng):
        """A body of the file's bytes, then zeros, generated as it is sent (claimSize)."""
        headers = headers + [("Content-Length", str(last - first + 1))]
        head = "HTTP/1.1 %d OK\r\n" % status + "".join("%s: %s\r\n" % h for h in headers) + "\r\n"
        sent = 0
        try:
            self.wfile.write(head.encode("latin-1"))
            if with_body:
                with open(path, "rb") as f:
                    at = first
                    while at <= last:
                        n = min(65536, last - at + 1)
                        if at < real_size:
                            f.seek(at)
                            chunk = f.read(min(n, real_size - at))
                        else:
                            chunk = bytes(n)
                        self.wfile.write(chunk)
                        sent += len(chunk)
                        at += len(chunk)
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True
        log(self.command, self.path, status, sent, sent, rng)

    def if_range_matches(self, etag, modified, refuse):
        value = self.headers.get("If-Range")
        if value is None:
            return True
        if refuse:
            return False
        value = value.strip()
        if value.startswith('"') or value.startswith("W/"):
            return value == etag
        return value == modified

    def respond(self, status, headers, body, with_body, rng, limit=None, pace=None, hold=None):
        if limit is not None:
            self.close_connection = True
        headers = headers + [
            ("Content-Length", str(len(body))),
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Server", "assetpack-faulty-http"),
        ]
        if self.close_connection:
            headers.append(("Connection", "close"))
        reason = self.responses.get(status, ("",))[0]
        head = "HTTP/1.1 %d %s\r\n" % (status, reason) + "".join("%s: %s\r\n" % h for h in headers) + "\r\n"
        total = sent = 0
        try:
            raw = head.encode("latin-1")
            self.wfile.write(raw)
            total = len(raw)
            if with_body:
                payload = memoryview(body)[: len(body) if limit is None else limit]
                step = 65536 if pace is None else max(1, pace)
                if hold is not None:
                    payload = payload[:hold]
                for i in range(0, len(payload), step):
                    chunk = payload[i : i + step]
                    self.wfile.write(chunk)
                    sent += len(chunk)
                    if pace is not None:
                        self.wfile.flush()
                        time.sleep(1)
                if hold is not None:
                    self.wfile.flush()
                    time.sleep(3600)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        log(self.command, self.path, status, sent, total + sent, rng)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def watch_parent(parent):
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
server.serve_forever()
