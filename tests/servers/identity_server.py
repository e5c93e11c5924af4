#!/usr/bin/env python3
"""A loopback stand-in for the cloud identity endpoints that have no emulator, for ferry's
credential tests (scripts/test-servers.sh starts it as `identity`). It issues credentials only,
and checks what the real endpoints check:

  EC2 instance metadata (IMDSv2)
    PUT  /latest/api/token                         needs X-aws-ec2-metadata-token-ttl-seconds
                                                   (1-21600); answers a session token
    GET  /latest/meta-data/iam/security-credentials/         the role's name
    GET  /latest/meta-data/iam/security-credentials/ROLE     the role's credentials (JSON)
                                                   both need X-aws-ec2-metadata-token: a token it
                                                   issued (401 otherwise, as IMDSv2 does)
  ECS / EKS container credentials
    GET  /container/credentials                    needs Authorization: the token given with
                                                   --container-token (401 otherwise)

Credentials live --life seconds (default 3600); each answer issues new ones (ASIA...). GET
/_stats returns how many of each were issued and refused, so a test can tell a refresh from a
cached answer. Binds 127.0.0.1 only.
"""

import argparse
import datetime
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROLE = "ferry-instance-role"


class State:
    def __init__(self, life, container_token):
        self.life = life
        self.container_token = container_token
        self.imds_tokens = set()
        self.lock = threading.Lock()
        self.stats = {"imds_tokens": 0, "imds_credentials": 0, "container_credentials": 0,
                      "refused": 0}

    def count(self, what):
        with self.lock:
            self.stats[what] += 1

    def credentials(self):
        expiration = (datetime.datetime.now(datetime.timezone.utc)
                      + datetime.timedelta(seconds=self.life))
        return {
            "Code": "Success",
            "Type": "AWS-HMAC",
            "AccessKeyId": "ASIA" + secrets.token_hex(8).upper(),
            "SecretAccessKey": secrets.token_urlsafe(30),
            "Token": secrets.token_urlsafe(60),
            "Expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "LastUpdated": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ"),
        }


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # no request lines with tokens in the log
            pass

        def reply(self, status, body, content_type="text/plain"):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def refuse(self, status, why):
            state.count("refused")
            self.reply(status, why)

        def do_PUT(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            if self.path != "/latest/api/token":
                return self.refuse(404, "not found")
            ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
            if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return self.refuse(400, "missing or invalid X-aws-ec2-metadata-token-ttl-seconds")
            token = secrets.token_urlsafe(32)
            with state.lock:
                state.imds_tokens.add(token)
                state.stats["imds_tokens"] += 1
            self.reply(200, token)

        def do_GET(self):
            prefix = "/latest/meta-data/iam/security-credentials/"
            if self.path == "/_stats":
                with state.lock:
                    return self.reply(200, json.dumps(state.stats), "application/json")
            if self.path.startswith(prefix):
                token = self.headers.get("X-aws-ec2-metadata-token", "")
                with state.lock:
                    known = token in state.imds_tokens
                if not known:
                    return self.refuse(401, "IMDSv2 needs a session token")
                role = self.path[len(prefix):]
                if role == "":
                    return self.reply(200, ROLE)
                if role != ROLE:
                    return self.refuse(404, "no such role")
                state.count("imds_credentials")
                return self.reply(200, json.dumps(state.credentials()), "application/json")
            if self.path == "/container/credentials":
                if self.headers.get("Authorization", "") != state.container_token:
                    return self.refuse(401, "wrong or missing Authorization")
                state.count("container_credentials")
                body = state.credentials()
                for key in ("Code", "Type", "LastUpdated"):
                    body.pop(key)
                body["RoleArn"] = "arn:aws:iam::123456789012:role/ferry-task-role"
                return self.reply(200, json.dumps(body), "application/json")
            return self.refuse(404, "not found")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--life", type=int, default=3600)
    parser.add_argument("--container-token", default="ferry-container-token")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port),
                                 make_handler(State(args.life, args.container_token)))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
