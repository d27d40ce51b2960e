"""`<provider> probe` (ccm_provider_sdk/probe.py), the kubelet's exec probe
of a sidecar: the fixture executable run as `fixture_provider.py probe ...`
(serve() answers it) against the fixture serving in sidecar mode, configured
or not, and SIGSTOPped (alive, accepting connections, answering nothing)."""
import os
import signal
import subprocess
import sys
import tempfile
import unittest

from ccm.provider.v1 import lifecycle_pb2, lifecycle_pb2_grpc
from ccm_provider_sdk.probe import PROBE_FAILED, PROBE_OK, PROBE_USAGE, parse_probe_args
from test_serve import FIXTURE, WAIT_S, Child, base_env, channel


def probe(*args, env=None):
    """Runs the fixture as `probe args...`: (exit code, the probe's line). The
    fixture prints lines of its own before serve() (its stdout-guard test)."""
    r = subprocess.run([sys.executable, FIXTURE, "probe", *args], env={**base_env(), **(env or {})},
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=WAIT_S)
    lines = [line for line in r.stdout.decode().splitlines() if line.startswith("probe")]
    return r.returncode, "\n".join(lines)


class ProbeTest(unittest.TestCase):
    def test_arguments(self):
        e = "unix:///run/ccm-plugin/provider.sock"
        rows = [
            ([f"--endpoint={e}"], {}, (e, 3.0, False)),
            (["--endpoint", e, "--timeout", "500ms", "--ready"], {}, (e, 0.5, True)),
            (["--timeout=1.5s"], {"CCM_PROVIDER_ENDPOINT": e}, (e, 1.5, False)),
            ([], {}, 'probe: endpoint "" is not unix:///absolute/path.sock (--endpoint or $CCM_PROVIDER_ENDPOINT)'),
            ([f"--endpoint={e}", "--timeout=3"], {}, "probe: --timeout=3 is not a positive duration such as 3s or 500ms"),
            ([f"--endpoint={e}", "now"], {}, 'probe: unexpected argument "now" (usage: probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready])'),
        ]
        for args, env, want in rows:
            self.assertEqual(parse_probe_args(args, env), want, args)

    def test_answers(self):
        d = tempfile.mkdtemp(prefix="ccm-pyprobe-")
        sock = os.path.join(d, "p.sock")
        endpoint = "unix://" + sock
        self.assertEqual(probe(f"--endpoint={endpoint}")[0], PROBE_FAILED, "nothing listens")
        self.assertEqual(probe("--endpoint=tcp://x")[0], PROBE_USAGE)
        c = Child(base_env(), (f"--endpoint={endpoint}",))
        self.addCleanup(c.kill)
        ch = channel(sock)
        self.addCleanup(ch.close)
        rows = [
            ("alive", [f"--endpoint={endpoint}"], {}, PROBE_OK, f"probe ok: {endpoint}: grpc.health.v1 SERVING"),
            ("endpoint from the environment", [], {"CCM_PROVIDER_ENDPOINT": endpoint}, PROBE_OK, "SERVING"),
            ("not configured", [f"--endpoint={endpoint}", "--ready"], {}, PROBE_FAILED, "ready=false"),
        ]
        for name, args, env, code, says in rows:
            got, out = probe(*args, env=env)
            self.assertEqual((got, out.count("\n")), (code, 0), f"{name}: one line: {out}")
            self.assertIn(says, out, name)
        lifecycle_pb2_grpc.LifecycleServiceStub(ch).Configure(lifecycle_pb2.ConfigureRequest(), timeout=WAIT_S)
        got, out = probe(f"--endpoint={endpoint}", "--ready")
        self.assertEqual(got, PROBE_OK, out)
        self.assertIn("IdentityService/Probe ready", out)
        c.proc.send_signal(signal.SIGSTOP)
        try:
            got, out = probe(f"--endpoint={endpoint}", "--timeout=500ms")
        finally:
            c.proc.send_signal(signal.SIGCONT)
        self.assertEqual(got, PROBE_FAILED, out)
        self.assertIn("no answer to grpc.health.v1 Check within 0.5s", out)


if __name__ == "__main__":
    unittest.main()
