# A mitmproxy addon of Aviary's: writes every HTTP(S) exchange the proxy saw for one task, and
# every TLS handshake that failed, with the guest (a sample that pins its certificates) or with
# the upstream, as JSON lines to the file named by AVIARY_FLOWS. The host turns them into the report's network.https_ex
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


def _tls_failed(side, data: tls.TlsData):
    # conn.error is mitmproxy's text: for the guest's side it wraps OpenSSL's reason in a sentence
    # of its own ("The client may not trust ... (OpenSSL Error([... 'tlsv1 alert decrypt error')]))");
    # the host reads the TLS alert or the error out of it (mitm-flows.ts).
    ctx = data.context
    _write({
        "type": "tls_failed",
        "side": side,
        "time": time.time(),
        "client": _peer(ctx.client.peername),
        "server": _peer(ctx.server.address),
        # The name the guest asked for; the name sent upstream (reverse mode: the upstream's) otherwise.
        "sni": ctx.client.sni or ctx.server.sni,
        "error": str(data.conn.error) if data.conn.error else "",
    })


def tls_failed_client(data: tls.TlsData):
    _tls_failed("guest", data)


def tls_failed_server(data: tls.TlsData):
    _tls_failed("upstream", data)
