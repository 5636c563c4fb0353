#!/usr/bin/env python3
"""An HTTP server for the tests that answers range requests, as object
stores and web servers do: it serves the files of a directory, and a GET
with `Range: bytes=FIRST-LAST` gets `206 Partial Content` with just those
bytes. It counts the bytes it sends, at /.bytes-sent.

    tests/http/ranges.py DIRECTORY PORT_FILE

It listens on a free port of 127.0.0.1, writes the port to PORT_FILE, and
serves until it is killed. Python's standard library only.
"""

import http.server
import os
import re
import sys

SENT = 0


class Ranges(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        global SENT
        if self.path == "/.bytes-sent":
            return self.reply(200, str(SENT).encode())
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            return self.send_error(404)
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
            if not wanted:
                body = file.read()
                SENT += len(body)
                return self.reply(200, body)
            first = int(wanted.group(1))
            last = min(int(wanted.group(2) or size - 1), size - 1)
            if first > last:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.end_headers()
                return
            file.seek(first)
            body = file.read(last - first + 1)
            SENT += len(body)
            return self.reply(206, body, f"bytes {first}-{last}/{size}")

    def reply(self, code, body, content_range=None):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if content_range:
            self.send_header("Content-Range", content_range)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    directory, port_file = sys.argv[1:3]
    handler = lambda *args: Ranges(*args, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
