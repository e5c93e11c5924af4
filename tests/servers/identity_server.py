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

  Microsoft Entra ID token endpoint (client credentials grant)
    POST /TENANT/oauth2/v2.0/token                 form: grant_type=client_credentials,
                                                   client_id (--azure-client-id), scope
                                                   https://storage.azure.com/.default, and one of
                                                   client_secret (azure_client_secret), or
                                                   client_assertion_type jwt-bearer with
                                                   client_assertion: either the federated token
                                                   (azure_federated_token), or an RS256 JWT
                                                   signed with the key of the certificate this
                                                   server writes to --azure-certificate (checked:
                                                   signature, x5t, aud = this URL, iss = sub =
                                                   client id, exp, nbf, a jti never seen before)
  Azure managed identity
    GET  /metadata/identity/oauth2/token           IMDS: needs Metadata: true, api-version and
                                                   resource=https://storage.azure.com/; no
                                                   X-Forwarded-For; client_id, when given, must be
                                                   --azure-client-id
    GET  /msi/token                                App Service: needs X-IDENTITY-HEADER
                                                   (azure_identity_header), api-version
                                                   2019-08-01 and the resource

  Google OAuth 2.0 token endpoint
    POST /google/token                             form, one of:
                                                   grant_type jwt-bearer with an assertion: an
                                                   RS256 JWT signed with the service account key
                                                   this server writes to --google-key (checked:
                                                   signature, kid, iss = its client_email, aud =
                                                   this URL, the scope, exp within the hour);
                                                   grant_type refresh_token with the client id,
                                                   secret and refresh token of the user file it
                                                   writes to --google-user;
                                                   grant_type token-exchange (workload identity
                                                   federation) with subject_token
                                                   google_subject_token
    POST /google/generateAccessToken               impersonation: needs a Bearer token the
                                                   exchange issued; JSON {"scope": [...]}
  Google metadata server
    GET  /computeMetadata/v1/instance/service-accounts/default/token
                                                   needs Metadata-Flavor: Google

Credentials and tokens live --life seconds (default 3600); each answer issues new ones (AWS:
ASIA...; Azure: a JWT with the issuer and audience Azure Storage, and Azurite in OAuth mode,
accept). GET /_stats returns how many of each were issued and refused, so a test can tell a
refresh from a cached answer. The secrets named in lowercase above come from the --secrets file
(NAME=VALUE lines; others' names are ignored); one it does not name is off. Binds 127.0.0.1 only.
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

ROLE = "ferry-instance-role"


AZURE_SCOPE = "https://storage.azure.com/.default"
AZURE_RESOURCES = ("https://storage.azure.com/", "https://storage.azure.com")
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def write_client_certificate(path):
    """A throwaway RSA key and self-signed certificate, as an app registration would hold;
    returns the certificate."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ferry-test-client")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .sign(key, hashes.SHA256()))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    pem += cert.public_bytes(serialization.Encoding.PEM)
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(pem)
    os.replace(tmp, path)
    return cert


GOOGLE_EMAIL = "ferry-trainer@ferry-project.iam.gserviceaccount.com"
GOOGLE_SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
GOOGLE_USER = {"client_id": "ferry-client.apps.googleusercontent.com",
               "client_secret": secrets.token_urlsafe(18),
               "refresh_token": "1//" + secrets.token_urlsafe(30)}


def write_private(path, data):
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_google_files(key_path, user_path, port):
    """A service account key file (the key is the server's to check assertions with) and a
    user credentials file, both naming this server's token endpoint; returns the public key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    token_uri = f"http://127.0.0.1:{port}/google/token"
    write_private(key_path, json.dumps({
        "type": "service_account", "project_id": "ferry-project", "private_key_id": "ferry-kid",
        "private_key": pem, "client_email": GOOGLE_EMAIL, "client_id": "1234567890",
        "token_uri": token_uri}).encode())
    if user_path:
        write_private(user_path, json.dumps(dict(GOOGLE_USER, type="authorized_user",
                                                 token_uri=token_uri)).encode())
    return key.public_key()


class State:
    def __init__(self, args):
        self.life = args.life
        self.container_token = args.container_token
        self.azure = args
        self.imds_tokens = set()
        self.assertion_ids = set()
        self.signing_key = secrets.token_bytes(32)
        self.certificate = (write_client_certificate(args.azure_certificate)
                            if args.azure_certificate else None)
        self.lock = threading.Lock()
        self.stats = {"imds_tokens": 0, "imds_credentials": 0, "container_credentials": 0,
                      "azure_secret": 0, "azure_certificate": 0, "azure_federated": 0,
                      "azure_imds": 0, "azure_app_service": 0, "google_service_account": 0,
                      "google_user": 0, "google_federated": 0, "google_impersonated": 0,
                      "google_metadata": 0, "refused": 0}
        self.google_key = (write_google_files(args.google_key, args.google_user, args.port)
                           if args.google_key else None)
        self.google_federated_tokens = set()

    def azure_token(self):
        """An access token shaped as Entra ID's (HS256 here: Azurite reads, never verifies)."""
        now = int(time.time())
        header = {"typ": "JWT", "alg": "HS256"}
        claims = {"aud": "https://storage.azure.com", "iss":
                  f"https://sts.windows.net/{self.azure.azure_tenant}/",
                  "iat": now, "nbf": now, "exp": now + self.life,
                  "appid": self.azure.azure_client_id, "oid": "ferry-test-object",
                  "tid": self.azure.azure_tenant}
        signing_input = (b64url(json.dumps(header).encode()) + "."
                         + b64url(json.dumps(claims).encode()))
        signature = hmac.new(self.signing_key, signing_input.encode(), hashlib.sha256).digest()
        return signing_input + "." + b64url(signature)

    def check_google_assertion(self, assertion, audience):
        """None when `assertion` is the service account's valid JWT, else why not."""
        try:
            head, body, signature = assertion.split(".")
            header = json.loads(b64url_decode(head))
            claims = json.loads(b64url_decode(body))
            self.google_key.verify(b64url_decode(signature), f"{head}.{body}".encode(),
                                   padding.PKCS1v15(), hashes.SHA256())
        except Exception:  # malformed, or InvalidSignature
            return "Invalid JWT Signature."
        now = time.time()
        if header.get("alg") != "RS256" or header.get("kid") != "ferry-kid":
            return "Invalid JWT: alg or kid"
        if claims.get("iss") != GOOGLE_EMAIL or claims.get("aud") != audience:
            return "Invalid JWT: iss or aud"
        if GOOGLE_SCOPE not in claims.get("scope", "").split():
            return "Invalid JWT: scope"
        if not now - 300 <= claims.get("iat", 0) <= now + 300 or \
                not now < claims.get("exp", 0) <= claims["iat"] + 3600:
            return "Invalid JWT: Token must be a short-lived token (60 minutes)"
        return None

    def check_certificate_assertion(self, assertion, audience):
        """None when `assertion` is a valid client assertion, else why not."""
        if self.certificate is None:
            return "no --azure-certificate"
        try:
            head, body, signature = assertion.split(".")
            header = json.loads(b64url_decode(head))
            claims = json.loads(b64url_decode(body))
        except ValueError:
            return "client_assertion is not a JWT"
        if header.get("alg") != "RS256":
            return "alg must be RS256"
        thumbprint = b64url(self.certificate.fingerprint(hashes.SHA1()))
        if header.get("x5t") != thumbprint:
            return "x5t is not the thumbprint of the registered certificate"
        try:
            self.certificate.public_key().verify(b64url_decode(signature),
                                                 f"{head}.{body}".encode(),
                                                 padding.PKCS1v15(), hashes.SHA256())
        except Exception:  # cryptography raises InvalidSignature
            return "the assertion's signature does not verify"
        now = time.time()
        if claims.get("aud") != audience:
            return f"aud must be {audience}"
        if claims.get("iss") != self.azure.azure_client_id or claims.get("sub") != claims["iss"]:
            return "iss and sub must be the client id"
        if not now - 300 <= claims.get("nbf", now + 999) <= now + 300:
            return "nbf is not now"
        if not now < claims.get("exp", 0) <= now + 3600:
            return "exp is not within the hour"
        jti = claims.get("jti")
        with self.lock:
            if not jti or jti in self.assertion_ids:
                return "jti missing or used before"
            self.assertion_ids.add(jti)
        return None

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

        def oauth_refuse(self, status, error, description):
            state.count("refused")
            self.reply(status, json.dumps({"error": error, "error_description": description}),
                       "application/json")

        def google_reply(self, kind):
            state.count(kind)
            token = "ya29." + secrets.token_urlsafe(40)
            with state.lock:
                if kind == "google_federated":
                    state.google_federated_tokens.add(token)
            self.reply(200, json.dumps({"access_token": token, "expires_in": state.life,
                                        "token_type": "Bearer"}), "application/json")

        def google_token(self, body):
            form = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
            grant = form.get("grant_type")
            if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer" and state.google_key:
                audience = f"http://{self.headers.get('Host')}{self.path}"
                why = state.check_google_assertion(form.get("assertion", ""), audience)
                if why:
                    return self.oauth_refuse(400, "invalid_grant", why)
                return self.google_reply("google_service_account")
            if grant == "refresh_token":
                if any(form.get(k) != v for k, v in GOOGLE_USER.items()):
                    return self.oauth_refuse(400, "invalid_grant",
                                             "Token has been expired or revoked.")
                return self.google_reply("google_user")
            if grant == "urn:ietf:params:oauth:grant-type:token-exchange":
                if not state.azure.google_subject_token or \
                        form.get("subject_token") != state.azure.google_subject_token:
                    return self.oauth_refuse(400, "invalid_grant",
                                             "The subject token is not valid.")
                if not form.get("audience") or not form.get("subject_token_type"):
                    return self.oauth_refuse(400, "invalid_request", "audience")
                return self.google_reply("google_federated")
            return self.oauth_refuse(400, "unsupported_grant_type", f"{grant}")

        def google_impersonate(self, body):
            bearer = self.headers.get("Authorization", "").removeprefix("Bearer ")
            with state.lock:
                known = bearer in state.google_federated_tokens
            if not known:
                return self.oauth_refuse(401, "UNAUTHENTICATED", "Request had invalid credentials.")
            try:
                scope = json.loads(body).get("scope", [])
            except ValueError:
                scope = []
            if GOOGLE_SCOPE not in scope:
                return self.oauth_refuse(400, "INVALID_ARGUMENT", "scope")
            state.count("google_impersonated")
            expire = (datetime.datetime.now(datetime.timezone.utc)
                      + datetime.timedelta(seconds=state.life))
            self.reply(200, json.dumps({"accessToken": "ya29." + secrets.token_urlsafe(40),
                                        "expireTime": expire.strftime("%Y-%m-%dT%H:%M:%SZ")}),
                       "application/json")

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            if self.path == "/google/token":
                return self.google_token(body)
            if self.path == "/google/generateAccessToken":
                return self.google_impersonate(body)
            parts = self.path.split("/")
            if len(parts) != 5 or parts[2:] != ["oauth2", "v2.0", "token"]:
                return self.refuse(404, "not found")
            if parts[1] != state.azure.azure_tenant:
                return self.oauth_refuse(400, "invalid_request",
                                         f"AADSTS90002: Tenant '{parts[1]}' not found.")
            form = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
            if form.get("grant_type") != "client_credentials":
                return self.oauth_refuse(400, "unsupported_grant_type", "grant_type")
            if form.get("scope") != AZURE_SCOPE:
                return self.oauth_refuse(400, "invalid_scope", "AADSTS70011: scope")
            if form.get("client_id") != state.azure.azure_client_id:
                return self.oauth_refuse(400, "unauthorized_client",
                                         "AADSTS700016: Application not found in the directory.")
            if "client_secret" in form:
                if form["client_secret"] != state.azure.azure_client_secret:
                    return self.oauth_refuse(401, "invalid_client",
                                             "AADSTS7000215: Invalid client secret provided.")
                kind = "azure_secret"
            elif form.get("client_assertion_type") == ASSERTION_TYPE:
                assertion = form.get("client_assertion", "")
                if state.azure.azure_federated_token and assertion == state.azure.azure_federated_token:
                    kind = "azure_federated"
                else:
                    audience = f"http://{self.headers.get('Host')}{self.path}"
                    why = state.check_certificate_assertion(assertion, audience)
                    if why:
                        return self.oauth_refuse(401, "invalid_client",
                                                 f"AADSTS700027: Client assertion failed: {why}.")
                    kind = "azure_certificate"
            else:
                return self.oauth_refuse(401, "invalid_client", "AADSTS7000216: no credential")
            state.count(kind)
            self.reply(200, json.dumps({"token_type": "Bearer", "expires_in": state.life,
                                        "ext_expires_in": state.life,
                                        "access_token": state.azure_token()}),
                       "application/json")

        def managed_identity(self, query, app_service):
            kind = "azure_app_service" if app_service else "azure_imds"
            if app_service:
                if self.headers.get("X-IDENTITY-HEADER") != state.azure.azure_identity_header:
                    return self.refuse(401, "wrong or missing X-IDENTITY-HEADER")
                if query.get("api-version") != "2019-08-01":
                    return self.refuse(400, "api-version must be 2019-08-01")
            else:
                if self.headers.get("Metadata") != "true":
                    return self.oauth_refuse(400, "invalid_request",
                                             "Required metadata header not specified")
                if self.headers.get("X-Forwarded-For"):
                    return self.refuse(400, "IMDS refuses forwarded requests")
                if not query.get("api-version"):
                    return self.oauth_refuse(400, "invalid_request", "api-version")
            if query.get("resource") not in AZURE_RESOURCES:
                return self.oauth_refuse(400, "invalid_resource", "resource")
            if query.get("client_id", state.azure.azure_client_id) != state.azure.azure_client_id:
                return self.oauth_refuse(400, "invalid_request",
                                         "Identity not found")
            state.count(kind)
            now = int(time.time())
            self.reply(200, json.dumps({"access_token": state.azure_token(),
                                        "expires_in": str(state.life),
                                        "expires_on": str(now + state.life),
                                        "resource": query["resource"],
                                        "token_type": "Bearer",
                                        "client_id": state.azure.azure_client_id}),
                       "application/json")

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
            path, _, query_text = self.path.partition("?")
            if path == "/computeMetadata/v1/instance/service-accounts/default/token":
                if self.headers.get("Metadata-Flavor") != "Google":
                    return self.refuse(403, "Missing required header: Metadata-Flavor")
                state.count("google_metadata")
                return self.reply(200, json.dumps({
                    "access_token": "ya29." + secrets.token_urlsafe(40), "expires_in": state.life,
                    "token_type": "Bearer"}), "application/json")
            if path in ("/metadata/identity/oauth2/token", "/msi/token"):
                query = dict(urllib.parse.parse_qsl(query_text))
                return self.managed_identity(query, app_service=path == "/msi/token")
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


SECRET_NAMES = ("azure_client_secret", "azure_federated_token", "azure_identity_header",
                "google_subject_token")


def read_secrets(args):
    """Sets each secret on args from the --secrets file; one not named there stays empty (off)."""
    for name in SECRET_NAMES:
        setattr(args, name, "")
    if not args.secrets:
        return
    with open(args.secrets, encoding="utf-8") as f:
        for line in f:
            name, sep, value = line.rstrip("\n").partition("=")
            if not sep:
                raise SystemExit(f"{args.secrets}: a line without '='")
            if name in SECRET_NAMES:  # the file also holds other servers' secrets
                setattr(args, name, value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--life", type=int, default=3600)
    parser.add_argument("--container-token", default="ferry-container-token")
    parser.add_argument("--azure-tenant", default="ferry-tenant")
    parser.add_argument("--azure-client-id", default="ferry-client")
    parser.add_argument("--secrets", default="",
                        help="a file of NAME=VALUE lines: azure_client_secret, "
                        "azure_federated_token, azure_identity_header, google_subject_token "
                        "(kept off the command line, which logs and ps show)")
    parser.add_argument("--azure-certificate", default="",
                        help="where to write the client certificate and its key (PEM)")
    parser.add_argument("--google-key", default="",
                        help="where to write a service account key file (JSON)")
    parser.add_argument("--google-user", default="",
                        help="where to write a user credentials file (JSON)")
    args = parser.parse_args()
    read_secrets(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(State(args)))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
