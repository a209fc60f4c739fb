"""A loopback receiver that follows the handler rules of an OpenTelemetry Collector's OTLP/HTTP
profiles endpoint and of Pyroscope's /ingest, for the tests of `liftoff push`.

python receiver.py LOG_FILE OUT_DIR [MODE]; prints its port, then serves until killed.
MODE: ok (default), hang (never answers), status:CODE (always CODE), flaky:N (429, then 503 with
Retry-After: 0, for the first N requests, then ok). Every request is a JSON line in LOG_FILE."""
import gzip
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2

log_path, out_dir = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "ok"
lock = threading.Lock()
seen = {"requests": 0}


def record(entry):
    with lock:
        with open(log_path, "a") as log:
            log.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", content_type="text/plain", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        with lock:
            seen["requests"] += 1
            number = seen["requests"]
        entry = {"path": url.path, "query": {k: v[0] for k, v in query.items()}, "number": number,
                 "authorization": self.headers.get("Authorization"), "contentType": self.headers.get("Content-Type"),
                 "contentEncoding": self.headers.get("Content-Encoding")}
        if mode == "hang":
            record(dict(entry, answer="none"))
            time.sleep(60)
            return
        if mode.startswith("status:"):
            record(dict(entry, answer=int(mode[7:])))
            return self.answer(int(mode[7:]), b"internal error: the store is down\n")
        if mode.startswith("flaky:") and number <= int(mode[6:]):
            status = 429 if number == 1 else 503
            record(dict(entry, answer=status))
            return self.answer(status, b"try later\n", headers=[("Retry-After", "0")])
        if url.path == "/v1development/profiles":
            # The Collector's OTLP/HTTP rules: protobuf (or JSON) only, gzip when it says so.
            if self.headers.get("Content-Type") != "application/x-protobuf":
                record(dict(entry, answer=415))
                return self.answer(415, b"unsupported content type\n")
            if self.headers.get("Content-Encoding") == "gzip":
                try:
                    body = gzip.decompress(body)
                except OSError:
                    record(dict(entry, answer=400))
                    return self.answer(400, b"bad gzip\n")
            request = profiles_service_pb2.ExportProfilesServiceRequest()
            try:
                request.ParseFromString(body)
            except Exception:
                record(dict(entry, answer=400))
                return self.answer(400, b"not an ExportProfilesServiceRequest\n")
            strings = request.dictionary.string_table
            resource = request.resource_profiles[0]
            entry["service"] = next(kv.value.string_value for kv in resource.resource.attributes if kv.key == "service.name")
            entry["totals"] = {strings[p.sample_type.type_strindex]: sum(sum(s.values) for s in p.samples)
                               for p in resource.scope_profiles[0].profiles}
            record(dict(entry, answer=200))
            return self.answer(200, profiles_service_pb2.ExportProfilesServiceResponse().SerializeToString(),
                               "application/x-protobuf")
        if url.path == "/ingest":
            # Pyroscope's rules: a name, and with format=pprof the body itself is the profile.
            if "name" not in query or query.get("format", [""])[0] != "pprof":
                record(dict(entry, answer=400))
                return self.answer(400, b"name and format=pprof are required\n")
            raw = body
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            if not raw or raw[:1] not in (b"\x0a", b"\x12"):
                record(dict(entry, answer=422))
                return self.answer(422, b"failed to parse pprof\n")
            path = os.path.join(out_dir, "ingest-%d.pb.gz" % number)
            with open(path, "wb") as file:
                file.write(body)
            record(dict(entry, answer=200, saved=path))
            return self.answer(200)
        record(dict(entry, answer=404))
        return self.answer(404, b"not found\n")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
