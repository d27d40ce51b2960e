"""`<provider> probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]`:
a provider executable as its own kubelet exec probe, the same as the
TypeScript SDK's (sdk/probe.ts) and the Go SDK's (sdk/go/probe.go).

It dials the running provider's socket (--endpoint, else
CCM_PROVIDER_ENDPOINT), prints one line saying why, and returns the exit
code: 0 when grpc.health.v1 Check for ccm.provider.v1 answers SERVING
(liveness: nothing of the cloud, so a cloud outage never restarts the
provider) and, with --ready (readiness), IdentityService/Probe answers
ready=true; 1 otherwise (no answer within --timeout, default 3 s, is a
wedged process); 2 when its own command line is wrong. Read-only.
serve() answers it before serving."""
import re
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ccm.provider.v1 import identity_pb2, identity_pb2_grpc
from .protocol import ENV_SIDECAR_ENDPOINT, HEALTH_SERVICE_NAME, unix_socket_path

PROBE_COMMAND = "probe"
DEFAULT_PROBE_TIMEOUT_S = 3.0
PROBE_OK, PROBE_FAILED, PROBE_USAGE = 0, 1, 2
_USAGE = "usage: probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]"


def parse_probe_timeout(value):
    """`3s`, `500ms`, `1.5s` -> seconds; None when not a positive duration."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s)", value)
    if not m:
        return None
    s = float(m.group(1)) / (1 if m.group(2) == "s" else 1000)
    return s if s > 0 else None


def parse_probe_args(args, env):
    """(endpoint, timeout_s, ready), or a str: the one-line complaint."""
    endpoint, timeout, ready = None, None, False
    i = 0
    while i < len(args):
        a = args[i]
        name, inline = (a.split("=", 1) + [None])[:2] if a.startswith("--") and "=" in a else (a, None)
        if name in ("--endpoint", "--timeout"):
            value = inline
            if value is None:
                i += 1
                value = args[i] if i < len(args) else None
            if name == "--endpoint":
                endpoint = value
            else:
                timeout = value
        elif name == "--ready" and inline is None:
            ready = True
        else:
            return "probe: unexpected argument %s (%s)" % (_quote(a), _USAGE)
        i += 1
    endpoint = endpoint or env.get(ENV_SIDECAR_ENDPOINT, "")
    if unix_socket_path(endpoint) is None:
        return "probe: endpoint %s is not unix:///absolute/path.sock (--endpoint or $%s)" % (_quote(endpoint), ENV_SIDECAR_ENDPOINT)
    timeout_s = DEFAULT_PROBE_TIMEOUT_S if timeout is None else parse_probe_timeout(timeout)
    if timeout_s is None:
        return "probe: --timeout=%s is not a positive duration such as 3s or 500ms" % timeout
    return endpoint, timeout_s, ready


def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _call_error(call, err, timeout_s):
    if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "no answer to %s within %gs (a process that accepts connections but answers nothing is wedged)" % (call, timeout_s)
    return "%s failed: %s: %s" % (call, err.code().name, _quote(err.details() or ""))


def check_provider(endpoint, ready, timeout_s):
    """What the provider at `endpoint` answered, when it passes; raises
    RuntimeError saying why not. Every call within `timeout_s` in all."""
    deadline = time.monotonic() + timeout_s
    left = lambda: max(0.001, deadline - time.monotonic())  # noqa: E731
    with grpc.insecure_channel(endpoint) as channel:
        try:
            h = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=HEALTH_SERVICE_NAME), timeout=left())
        except grpc.RpcError as e:
            raise RuntimeError(_call_error("grpc.health.v1 Check", e, timeout_s)) from None
        if h.status != health_pb2.HealthCheckResponse.SERVING:
            raise RuntimeError("grpc.health.v1 Check answered %s" % health_pb2.HealthCheckResponse.ServingStatus.Name(h.status))
        if not ready:
            return "grpc.health.v1 SERVING"
        try:
            p = identity_pb2_grpc.IdentityServiceStub(channel).Probe(identity_pb2.ProbeRequest(), timeout=left())
        except grpc.RpcError as e:
            raise RuntimeError(_call_error("IdentityService/Probe", e, timeout_s)) from None
        if not p.ready:
            raise RuntimeError(
                "SERVING, but IdentityService/Probe answered ready=false (not configured by the host yet, or the provider says it is not ready)"
            )
        return "grpc.health.v1 SERVING, IdentityService/Probe ready"


def run_probe(args, env, out):
    """Runs the probe for `args` (after `probe`), writes its one line with
    out(line), returns the exit code."""
    parsed = parse_probe_args(args, env)
    if isinstance(parsed, str):
        out(parsed)
        return PROBE_USAGE
    endpoint, timeout_s, ready = parsed
    try:
        out("probe ok: %s: %s" % (endpoint, check_provider(endpoint, ready, timeout_s)))
        return PROBE_OK
    except RuntimeError as e:
        out("probe failed: %s: %s" % (endpoint, e))
        return PROBE_FAILED
