"""A `gpt2lab serve` started for a test or benchmark, and raw HTTP to it.

    with serve_util.Server(model_dir, "--api-key", "k") as srv:
        status, headers, body = srv.request("POST", "/v1/completions", {"prompt": "x"}, key="k")

The server listens on a free loopback port (--port 0; the port is read from
its first line); leaving the block sends SIGTERM and waits for it to exit.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class Server:
    def __init__(self, model, *flags, log=None):
        self.cmd = [harness.BIN, "serve", "--model", model, "--port", "0", *flags]
        self.log = log
        self.proc = None
        self.port = None

    def __enter__(self):
        err = open(self.log, "w") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        line = self.proc.stdout.readline()
        if "listening on http://" not in line:
            self.proc.kill()
            raise SystemExit(f"serve did not start: {line!r} (log: {self.log})")
        self.banner = line
        self.port = int(line.split("http://", 1)[1].split()[0].rsplit(":", 1)[1])
        return self

    def __exit__(self, *exc):
        self.stop(signal.SIGTERM)

    def stop(self, sig):
        """Sends sig and waits; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, key=None, headers=None, timeout=60):
        """(status, headers, parsed JSON or text) of one request on a new connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if key is not None:
            h["Authorization"] = f"Bearer {key}"
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        if data is not None and "Content-Type" not in h:
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        raw = r.read().decode("utf-8", errors="replace")
        conn.close()
        try:
            return r.status, dict(r.getheaders()), json.loads(raw)
        except ValueError:
            return r.status, dict(r.getheaders()), raw

    def metrics(self, key=None):
        """GET /metrics as {name without "gpt2lab:": value}."""
        status, headers, text = self.request("GET", "/metrics", key=key)
        assert status == 200 and headers.get("Content-Type", "").startswith("text/plain"), (status, headers)
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.split()
                out[name.removeprefix("gpt2lab:")] = float(value)
        return out

    def raw(self, data, timeout=30):
        """Sends bytes on a new connection and reads until the server closes
        it or `timeout` passes; returns what came back."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            s.sendall(data)
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return got
                got += chunk
        except socket.timeout:
            return got + b"<timeout>"
        finally:
            s.close()
