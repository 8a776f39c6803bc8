# A mitmproxy addon of Aviary's: writes every HTTP(S) exchange the proxy saw for one task, and
# every TLS handshake the guest refused (a sample that pins its certificates), as JSON lines to
# the file named by AVIARY_FLOWS. The host turns them into the report's network.https_ex
# (src/core/processing/network/mitm-flows.ts). Bodies are kept up to AVIARY_FLOWS_BODY bytes each.
import base64
import json
import os
import time

from mitmproxy import http, tls

OUT = os.environ.get("AVIARY_FLOWS", "flows.jsonl")
BODY = int(os.environ.get("AVIARY_FLOWS_BODY", str(1024 * 1024)))


def _write(record):
    with open(OUT, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, separators=(",", ":")) + "\n")


def _body(message):
    raw = message.raw_content or b""
    return {
        "headers": [[k, v] for k, v in message.headers.items(multi=True)],
        "body_b64": base64.b64encode(raw[:BODY]).decode("ascii"),
        "body_size": len(raw),
        "truncated": len(raw) > BODY,
    }


def _peer(address):
    return [address[0], address[1]] if address else None


def _flow(flow: http.HTTPFlow, error):
    req = flow.request
    record = {
        "type": "flow",
        "time": flow.timestamp_start,
        "client": _peer(flow.client_conn.peername),
        "server": _peer(flow.server_conn.address),
        "sni": flow.client_conn.sni,
        "scheme": req.scheme,
        "method": req.method,
        "host": req.pretty_host,
        "port": req.port,
        "path": req.path,
        "http_version": req.http_version,
        "request": _body(req),
        "response": None,
        "error": error,
    }
    if flow.response is not None:
        record["response"] = dict(_body(flow.response), status=flow.response.status_code, reason=flow.response.reason)
    _write(record)


def response(flow: http.HTTPFlow):
    _flow(flow, None)


def error(flow: http.HTTPFlow):
    _flow(flow, str(flow.error) if flow.error else "error")


def tls_failed_client(data: tls.TlsData):
    _write({
        "type": "tls_failed",
        "time": time.time(),
        "client": _peer(data.context.client.peername),
        "server": _peer(data.context.server.address),
        "sni": data.context.client.sni,
        "error": str(data.conn.error) if data.conn.error else "the client refused the handshake",
    })
