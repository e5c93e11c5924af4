#!/usr/bin/env python3
"""A loopback Databricks workspace for ferry's dbfs:/Volumes tests (scripts/test-servers.sh
starts it as `databricks`): the documented Files API 2.0 routes over Unity Catalog volumes held in
memory, and the workspace's OAuth token endpoint. It checks what the workspace checks:

  POST /oidc/v1/token                       OAuth machine-to-machine: Authorization Basic with
                                            --client-id and databricks_client_secret, a form
                                            with grant_type=client_credentials and scope all-apis;
                                            answers {"access_token", "token_type": "Bearer",
                                            "expires_in": --life, "scope"}
  Every /api/2.0/fs route needs "Authorization: Bearer T", T the personal access token
  (databricks_token) or an OAuth token it issued that has not expired (401 UNAUTHENTICATED
  otherwise, "Token is expired." for an expired one).
  HEAD   /api/2.0/fs/files{path}                 Content-Length, Content-Type, Last-Modified
  GET    /api/2.0/fs/files{path}                 the bytes; Range (206, Content-Range; 416
                                                 past the end); If-Unmodified-Since (412)
  PUT    /api/2.0/fs/files{path}?overwrite=B     the body (Content-Length or chunked); parent
                                                 folders are created; B false and the file
                                                 there: 409 ALREADY_EXISTS; 204
  DELETE /api/2.0/fs/files{path}                 204; 404 NOT_FOUND when missing
  GET    /api/2.0/fs/directories{path}           ?page_size (1-1000, default 1000) and
                                                 ?page_token: {"contents": [{"path",
                                                 "is_directory", "file_size", "last_modified",
                                                 "name"}], "next_page_token"}, by name
  PUT    /api/2.0/fs/directories{path}           creates the folder and its parents
  GET    /api/2.0/preview/scim/v2/Me             who the token belongs to: {"userName"} for the
                                                 personal access token; {"userName",
                                                 "applicationId", "displayName"} for OAuth
{path} is /Volumes/<catalog>/<schema>/<volume>/...: a volume not named by --volume (or
--read-only-volume, where writes get 403 PERMISSION_DENIED) is 404 NOT_FOUND. Errors are JSON
{"error_code", "message"}. GET /_stats returns the requests and tokens counted so far. Secrets come
from the --secrets file (NAME=VALUE lines); binds 127.0.0.1 only.
"""
import argparse
import base64
import email.utils
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_PAGE = 1000


class Workspace:
    def __init__(self, args):
        self.life = args.life
        self.client_id = args.client_id
        self.token = args.databricks_token
        self.client_secret = args.databricks_client_secret
        self.volumes = {v.strip("/"): False for v in args.volume}
        self.volumes.update({v.strip("/"): True for v in args.read_only_volume})
        self.files = {}  # absolute path -> (bytes, mtime seconds)
        self.folders = set()  # absolute paths of folders below a volume
        self.oauth = {}  # token -> expiry (time.time())
        self.lock = threading.Lock()
        self.stats = {"oauth_tokens": 0, "refused": 0, "expired": 0, "requests": 0}

    def volume_of(self, path):
        """(volume path, read-only) of an absolute path, or None."""
        parts = path.split("/")
        if len(parts) < 5 or parts[0] != "" or parts[1] != "Volumes":
            return None
        name = "/".join(parts[2:5])
        if name not in self.volumes:
            return None
        return "/Volumes/" + name, self.volumes[name]


def make_handler(ws):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            # The request line only: the Authorization header is never logged.
            print("%s %s" % (self.command, self.path.split("?")[0]), flush=True)

        def reply(self, status, body=b"", content_type="application/json", headers=()):
            if isinstance(body, str):
                body = body.encode()
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            if status not in (204, 304):
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD" and status != 204:
                self.wfile.write(body)

        def error(self, status, code, message):
            self.reply(status, json.dumps({"error_code": code, "message": message}))

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))

        def authorized(self):
            auth = self.headers.get("Authorization", "")
            token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
            with ws.lock:
                ws.stats["requests"] += 1
                if token and ws.token and secrets.compare_digest(token, ws.token):
                    return True
                expiry = ws.oauth.get(token)
                if expiry is not None and expiry > time.time():
                    return True
                ws.stats["refused"] += 1
                if expiry is not None:
                    ws.stats["expired"] += 1
            if expiry is not None:
                self.error(401, "UNAUTHENTICATED", "Token is expired.")
            else:
                self.error(401, "UNAUTHENTICATED", "Invalid access token.")
            return False

        def route(self):
            """(kind, absolute path, query) of an API URL, or None."""
            url = urllib.parse.urlsplit(self.path)
            for kind in ("files", "directories"):
                prefix = "/api/2.0/fs/" + kind + "/"
                if url.path.startswith(prefix):
                    path = urllib.parse.unquote(url.path[len(prefix) - 1:])
                    return kind, path.rstrip("/") or "/", urllib.parse.parse_qs(url.query)
            return None

        def resolve(self, write):
            """The route, checked: auth, a known volume, writes allowed. None once answered."""
            route = self.route()
            if route is None:
                self.error(404, "ENDPOINT_NOT_FOUND", "No API found for " + self.path.split("?")[0])
                return None
            if not self.authorized():
                return None
            volume = ws.volume_of(route[1])
            if volume is None:
                self.error(404, "NOT_FOUND", "The volume of %s does not exist." % route[1])
                return None
            if write and volume[1]:
                self.error(403, "PERMISSION_DENIED",
                           "User does not have WRITE VOLUME on Volume '%s'." %
                           volume[0][len("/Volumes/"):].replace("/", "."))
                return None
            return route + (volume[0],)

        def do_POST(self):
            if self.path.split("?")[0] != "/oidc/v1/token":
                return self.error(404, "ENDPOINT_NOT_FOUND", "No API found")
            form = urllib.parse.parse_qs(self.body().decode())
            auth = self.headers.get("Authorization", "")
            try:
                user, _, password = base64.b64decode(auth[len("Basic "):]).decode().partition(":")
            except ValueError:
                user, password = "", ""
            if not auth.startswith("Basic ") or user != ws.client_id or not ws.client_secret \
                    or not secrets.compare_digest(password, ws.client_secret):
                with ws.lock:
                    ws.stats["refused"] += 1
                return self.reply(401, json.dumps({"error": "invalid_client",
                                                   "error_description": "Client authentication "
                                                   "failed"}))
            if form.get("grant_type") != ["client_credentials"] or form.get("scope") != ["all-apis"]:
                return self.reply(400, json.dumps({"error": "invalid_request",
                                                   "error_description": "grant_type must be "
                                                   "client_credentials, scope all-apis"}))
            token = "dbx-oauth-" + secrets.token_urlsafe(24)
            with ws.lock:
                ws.oauth[token] = time.time() + ws.life
                ws.stats["oauth_tokens"] += 1
            self.reply(200, json.dumps({"access_token": token, "token_type": "Bearer",
                                        "expires_in": ws.life, "scope": "all-apis"}))

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            if self.path == "/_stats":
                with ws.lock:
                    return self.reply(200, json.dumps(ws.stats))
            if self.path == "/api/2.0/preview/scim/v2/Me":
                if not self.authorized():
                    return
                auth = self.headers["Authorization"]
                if auth.startswith("Bearer dbx-oauth-"):
                    return self.reply(200, json.dumps({"userName": ws.client_id,
                                                       "applicationId": ws.client_id,
                                                       "displayName": "ferry test principal"}))
                return self.reply(200, json.dumps({"userName": "ferry-user@example.com"}))
            route = self.resolve(write=False)
            if route is None:
                return
            kind, path, query, volume = route
            if kind == "directories":
                return self.list_folder(path, query, volume)
            with ws.lock:
                entry = ws.files.get(path)
            if entry is None:
                return self.error(404, "NOT_FOUND", "The file %s does not exist." % path)
            data, mtime = entry
            modified = email.utils.formatdate(mtime, usegmt=True)
            since = self.headers.get("If-Unmodified-Since")
            if since:
                limit = email.utils.parsedate_to_datetime(since).timestamp()
                if int(mtime) > int(limit):
                    return self.error(412, "PRECONDITION_FAILED", "The file was modified.")
            headers = [("Last-Modified", modified)]
            status = 200
            spec = self.headers.get("Range")
            if spec and spec.startswith("bytes=") and self.command == "GET":
                first, _, last = spec[len("bytes="):].partition("-")
                start = int(first)
                end = min(int(last), len(data) - 1) if last else len(data) - 1
                if start >= len(data):
                    return self.error(416, "INVALID_PARAMETER_VALUE", "Range not satisfiable")
                headers.append(("Content-Range", "bytes %d-%d/%d" % (start, end, len(data))))
                data = data[start:end + 1]
                status = 206
            if self.command == "HEAD":
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Last-Modified", modified)
                self.end_headers()
                return
            self.reply(status, data, "application/octet-stream", headers)

        def list_folder(self, path, query, volume):
            with ws.lock:
                if path in ws.files:
                    return self.error(400, "NOT_A_DIRECTORY", "%s is a file." % path)
                if path != volume and path not in ws.folders:
                    return self.error(404, "NOT_FOUND", "The directory %s does not exist." % path)
                names = {}
                for p, (data, mtime) in ws.files.items():
                    if p.rsplit("/", 1)[0] == path:
                        names[p.rsplit("/", 1)[1]] = {"path": p, "is_directory": False,
                                                      "file_size": len(data),
                                                      "last_modified": int(mtime * 1000)}
                for p in ws.folders:
                    if p.rsplit("/", 1)[0] == path:
                        names[p.rsplit("/", 1)[1]] = {"path": p + "/", "is_directory": True}
            try:
                size = int(query.get("page_size", [MAX_PAGE])[0])
            except ValueError:
                size = 0
            if not 1 <= size <= MAX_PAGE:
                return self.error(400, "INVALID_PARAMETER_VALUE",
                                  "page_size must be between 1 and %d" % MAX_PAGE)
            after = query.get("page_token", [""])[0]
            if after:
                after = base64.urlsafe_b64decode(after.encode()).decode()
            ordered = [n for n in sorted(names) if n > after]
            page = ordered[:size]
            body = {"contents": [dict(names[n], name=n) for n in page]}
            if len(ordered) > size:
                body["next_page_token"] = base64.urlsafe_b64encode(page[-1].encode()).decode()
            self.reply(200, json.dumps(body))

        def do_PUT(self):
            data = self.body()  # first, so that a refusal leaves the connection usable
            route = self.resolve(write=True)
            if route is None:
                return
            kind, path, query, volume = route
            with ws.lock:
                if kind == "directories":
                    if path in ws.files:
                        return self.error(409, "RESOURCE_CONFLICT", "%s is a file." % path)
                    self.add_folders(path, volume, include_self=True)
                    return self.reply(204)
                if path == volume or path in ws.folders:
                    return self.error(409, "RESOURCE_CONFLICT", "%s is a directory." % path)
                if path in ws.files and query.get("overwrite", ["true"])[0] == "false":
                    return self.error(409, "ALREADY_EXISTS", "The file %s exists." % path)
                if any(parent in ws.files for parent in self.parents(path, volume)):
                    return self.error(409, "RESOURCE_CONFLICT", "A parent of %s is a file." % path)
                self.add_folders(path, volume, include_self=False)
                ws.files[path] = (data, time.time())
            self.reply(204)

        def do_DELETE(self):
            route = self.resolve(write=True)
            if route is None:
                return
            kind, path, _, _ = route
            with ws.lock:
                if kind == "files" and path in ws.files:
                    del ws.files[path]
                    return self.reply(204)
                if kind == "directories" and path in ws.folders:
                    if any(p.startswith(path + "/") for p in list(ws.files) + list(ws.folders)):
                        return self.error(409, "DIRECTORY_NOT_EMPTY", "%s is not empty." % path)
                    ws.folders.discard(path)
                    return self.reply(204)
            self.error(404, "NOT_FOUND", "%s does not exist." % path)

        @staticmethod
        def parents(path, volume):
            parts = path[len(volume) + 1:].split("/")[:-1]
            return [volume + "/" + "/".join(parts[:i + 1]) for i in range(len(parts))]

        def add_folders(self, path, volume, include_self):
            for parent in self.parents(path, volume):
                ws.folders.add(parent)
            if include_self and path != volume:
                ws.folders.add(path)

    return Handler


SECRET_NAMES = ("databricks_token", "databricks_client_secret")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--life", type=int, default=3600, help="seconds an OAuth token lives")
    parser.add_argument("--client-id", default="ferry-sp")
    parser.add_argument("--volume", action="append", default=[],
                        help="catalog/schema/volume that exists (repeatable)")
    parser.add_argument("--read-only-volume", action="append", default=[],
                        help="catalog/schema/volume that exists but refuses writes (403)")
    parser.add_argument("--secrets", default="",
                        help="a file of NAME=VALUE lines: databricks_token, "
                        "databricks_client_secret (other names are ignored)")
    args = parser.parse_args()
    for name in SECRET_NAMES:
        setattr(args, name, "")
    if args.secrets:
        with open(args.secrets, encoding="utf-8") as f:
            for line in f:
                name, sep, value = line.rstrip("\n").partition("=")
                if sep and name in SECRET_NAMES:
                    setattr(args, name, value)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(Workspace(args)))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
