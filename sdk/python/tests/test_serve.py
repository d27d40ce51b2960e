"""serve() end to end: the fixture provider runs as a child process and is
driven the way the host drives one (handshake, cookie, version negotiation,
stdout guard, socket, NOT_CONFIGURED, errors, Shutdown, stdin EOF, signals,
sidecar mode, stale and live sockets). Waits poll with generous bounds; no
assertion is about time."""
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
from google.protobuf import duration_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

import ccm_provider_sdk as sdk
from ccm.provider.v1 import (common_pb2, identity_pb2, identity_pb2_grpc, instances_pb2, instances_pb2_grpc, lifecycle_pb2,
                             lifecycle_pb2_grpc, zones_pb2, zones_pb2_grpc)

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture_provider.py")
WAIT_S = 60


def base_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CCM_PLUGIN_", "CCM_PROVIDER_"))}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def exec_env(sock, versions="1"):
    return {**base_env(), sdk.protocol.MAGIC_COOKIE_KEY: sdk.protocol.MAGIC_COOKIE_VALUE,
            sdk.protocol.ENV_PROTOCOL_VERSIONS: versions, sdk.protocol.ENV_ENDPOINT: "unix://" + sock,
            sdk.protocol.ENV_INSTANCE_ID: "launch-nonce"}


class Child:
    """The fixture as a child process with its stdout and stderr collected."""

    def __init__(self, env, args=()):
        self.proc = subprocess.Popen([sys.executable, FIXTURE, *args], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.stdout, self.stderr = [], []
        self.readers = [threading.Thread(target=self._read, args=(s, out), daemon=True)
                        for s, out in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr))]
        for r in self.readers:
            r.start()

    @staticmethod
    def _read(stream, out):
        for line in stream:
            out.append(line.decode())

    def wait_line(self):
        for _ in range(WAIT_S * 10):
            if self.stdout or self.proc.poll() is not None:
                break
            time.sleep(0.1)
        return self.stdout[0] if self.stdout else None

    def wait_exit(self):
        code = self.proc.wait(WAIT_S)
        for r in self.readers:
            r.join(WAIT_S)
        return code

    def kill(self):
        """Ends the child and closes its pipes. Unclosed pipes are collected
        at a random moment and their ResourceWarning, printed by unittest in
        the middle of another test's "... ok" line, broke the suite's parse."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for r in self.readers:
            r.join(WAIT_S)
        for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            s.close()


def channel(sock):
    ch = grpc.insecure_channel("unix://" + sock)
    grpc.channel_ready_future(ch).result(timeout=WAIT_S)
    return ch


def wait_for(predicate):
    for _ in range(WAIT_S * 10):
        if predicate():
            return True
        time.sleep(0.1)
    return False


def call_error(fn, request):
    with unittest.TestCase().assertRaises(grpc.RpcError) as cm:
        fn(request, timeout=WAIT_S)
    return cm.exception


def reason_of(err):
    st = rpc_status.from_call(err)
    return sdk.error_reason(st) if st else "", (sdk.retry_after_ms(st) if st else None)


def node(name):
    return instances_pb2.InstanceExistsRequest(node=common_pb2.NodeRef(name=name))


class ServeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ccm-pysdk-")
        self.sock = os.path.join(self.dir, "p.sock")
        self.children = []

    def tearDown(self):
        for c in self.children:
            c.kill()

    def start(self, env, args=()):
        c = Child(env, args)
        self.children.append(c)
        return c

    def test_exec_mode_contract(self):
        marker = os.path.join(self.dir, "closed")
        c = self.start({**exec_env(self.sock), "FIXTURE_CLOSED": marker})
        self.assertEqual(c.wait_line(), f"CCMPLUGIN|1|1|unix|{self.sock}|grpc\n", "".join(c.stderr))
        self.assertEqual(stat.S_IMODE(os.stat(self.sock).st_mode), 0o600)
        ch = channel(self.sock)
        identity = identity_pb2_grpc.IdentityServiceStub(ch)
        lifecycle = lifecycle_pb2_grpc.LifecycleServiceStub(ch)
        instances = instances_pb2_grpc.InstancesServiceStub(ch)
        health = health_pb2_grpc.HealthStub(ch)
        for service in ("", "ccm.provider.v1"):
            self.assertEqual(health.Check(health_pb2.HealthCheckRequest(service=service), timeout=WAIT_S).status,
                             health_pb2.HealthCheckResponse.SERVING)

        info = identity.GetPluginInfo(identity_pb2.GetPluginInfoRequest(), timeout=WAIT_S)
        self.assertEqual((info.name, info.vendor_version, info.protocol_version, info.protocol_minor, info.instance_id),
                         ("fixture.example.com", "9.9.9", 1, sdk.protocol.PROTOCOL_MINOR, "launch-nonce"))
        caps = identity.GetPluginCapabilities(identity_pb2.GetPluginCapabilitiesRequest(), timeout=WAIT_S)
        self.assertEqual((list(caps.services), list(caps.capabilities), caps.provider_name), ([identity_pb2.SERVICE_INSTANCES], [], "fixture"))
        self.assertEqual(call_error(identity.GetMetrics, identity_pb2.GetMetricsRequest()).code(), grpc.StatusCode.UNIMPLEMENTED)

        # Before Configure: NOT_CONFIGURED, not ready; a bad config changes nothing.
        err = call_error(instances.InstanceExists, node("a"))
        self.assertEqual((err.code(), reason_of(err)[0]), (grpc.StatusCode.FAILED_PRECONDITION, sdk.NOT_CONFIGURED))
        # The gate comes first: a declared service's unimplemented method too; an undeclared service is UNIMPLEMENTED.
        err = call_error(instances.InstanceShutdown, instances_pb2.InstanceShutdownRequest())
        self.assertEqual((err.code(), reason_of(err)[0]), (grpc.StatusCode.FAILED_PRECONDITION, sdk.NOT_CONFIGURED))
        err = call_error(zones_pb2_grpc.ZonesServiceStub(ch).GetZone, zones_pb2.GetZoneRequest())
        self.assertEqual(err.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertFalse(identity.Probe(identity_pb2.ProbeRequest(), timeout=WAIT_S).ready)
        err = call_error(lifecycle.Configure, lifecycle_pb2.ConfigureRequest(cloud_config=b"bad"))
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(reason_of(call_error(instances.InstanceExists, node("a")))[0], sdk.NOT_CONFIGURED)

        lifecycle.Configure(lifecycle_pb2.ConfigureRequest(cloud_config=b"{}"), timeout=WAIT_S)
        self.assertTrue(identity.Probe(identity_pb2.ProbeRequest(), timeout=WAIT_S).ready)
        self.assertTrue(instances.InstanceExists(node("a"), timeout=WAIT_S).exists)
        self.assertTrue(instances.InstanceExists(node("stray"), timeout=WAIT_S).exists)
        err = call_error(instances.InstanceExists, node("throttle"))
        self.assertEqual((err.code(), reason_of(err)), (grpc.StatusCode.RESOURCE_EXHAUSTED, (sdk.RATE_LIMITED, 2500)))
        err = call_error(instances.InstanceExists, node("boom"))
        self.assertEqual(err.code(), grpc.StatusCode.INTERNAL)
        self.assertIn("boom", err.details())
        err = call_error(instances.InstanceShutdown, instances_pb2.InstanceShutdownRequest())
        self.assertEqual(err.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertIn("InstanceShutdown is not implemented by this provider", err.details())

        # Shutdown aborts an in-flight call (UNAVAILABLE), answers, and the process exits 0.
        slow = instances.InstanceExists.future(node("slow"), timeout=WAIT_S)
        time.sleep(0.2)  # Not a timing assertion: only gives the call a chance to be in flight.
        lifecycle.Shutdown(lifecycle_pb2.ShutdownRequest(grace_period=duration_pb2.Duration(seconds=10)), timeout=WAIT_S)
        self.assertEqual(slow.exception(timeout=WAIT_S).code(), grpc.StatusCode.UNAVAILABLE)
        ch.close()
        self.assertEqual(c.wait_exit(), 0, "".join(c.stderr))
        self.assertFalse(os.path.exists(self.sock))
        self.assertTrue(os.path.exists(marker), "close() ran")
        self.assertEqual(c.stdout, [f"CCMPLUGIN|1|1|unix|{self.sock}|grpc\n"], "stdout holds the handshake line only")
        err_text = "".join(c.stderr)
        self.assertIn("printed before serve", err_text)
        self.assertIn("a stray write to fd 1", err_text)
        self.assertIn('"msg": "provider stopping"', err_text)
        self.assertIn("provider method raised an unexpected exception", err_text)

    def test_stdin_eof_stops_the_provider(self):
        c = self.start(exec_env(self.sock))
        self.assertIsNotNone(c.wait_line(), "".join(c.stderr))
        c.proc.stdin.close()
        self.assertEqual(c.wait_exit(), 0, "".join(c.stderr))
        self.assertIn('"reason": "stdin closed"', "".join(c.stderr))
        self.assertFalse(os.path.exists(self.sock))

    def test_sigterm_stops_the_provider(self):
        c = self.start(exec_env(self.sock))
        self.assertIsNotNone(c.wait_line(), "".join(c.stderr))
        c.proc.send_signal(signal.SIGTERM)
        self.assertEqual(c.wait_exit(), 0, "".join(c.stderr))
        self.assertIn('"reason": "SIGTERM"', "".join(c.stderr))
        self.assertFalse(os.path.exists(self.sock))

    def test_refusals_exit_1_with_one_line(self):
        for env, args, message in [
            (base_env(), (), "not by hand"),
            (exec_env(self.sock, versions="2"), (), "the host offered 2: upgrade the plugin"),
            ({**base_env(), sdk.protocol.MAGIC_COOKIE_KEY: "wrong"}, ("--endpoint=unix://" + self.sock,), "not by hand"),
        ]:
            c = self.start(env, args)
            self.assertEqual(c.wait_exit(), 1)
            self.assertFalse([line for line in c.stdout if line.startswith("CCMPLUGIN")])
            self.assertIn(message, c.stderr[-1])

    def test_sidecar_mode_replaces_a_stale_socket_and_outlives_shutdown(self):
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(self.sock)
        stale.close()  # The file stays; nothing answers on it.
        c = self.start(base_env(), ("--endpoint=unix://" + self.sock,))
        ch = channel(self.sock)
        identity = identity_pb2_grpc.IdentityServiceStub(ch)
        first = identity.GetPluginInfo(identity_pb2.GetPluginInfoRequest(), timeout=WAIT_S).instance_id
        self.assertRegex(first, r"^[0-9a-f-]{36}$")
        lifecycle_pb2_grpc.LifecycleServiceStub(ch).Shutdown(lifecycle_pb2.ShutdownRequest(), timeout=WAIT_S)
        # Still serving the next host after Shutdown.
        health = health_pb2_grpc.HealthStub(ch)
        self.assertEqual(health.Check(health_pb2.HealthCheckRequest(), timeout=WAIT_S).status, health_pb2.HealthCheckResponse.SERVING)
        self.assertEqual(identity.GetPluginInfo(identity_pb2.GetPluginInfoRequest(), timeout=WAIT_S).instance_id, first)

        # A second provider on the live socket is refused and leaves it alone.
        other = self.start(base_env(), ("--endpoint=unix://" + self.sock,))
        self.assertEqual(other.wait_exit(), 1)
        self.assertIn("another process is listening", "".join(other.stderr))
        self.assertTrue(os.path.exists(self.sock))

        ch.close()
        c.proc.send_signal(signal.SIGTERM)
        self.assertEqual(c.wait_exit(), 0, "".join(c.stderr))
        self.assertFalse([line for line in c.stdout if line.startswith("CCMPLUGIN")], "no handshake in sidecar mode")
        self.assertFalse(os.path.exists(self.sock))

    def test_a_file_that_is_not_a_socket_is_refused(self):
        with open(self.sock, "w") as f:
            f.write("not a socket")
        c = self.start(base_env(), ("--endpoint=unix://" + self.sock,))
        self.assertEqual(c.wait_exit(), 1)
        self.assertIn("exists and is not a socket", "".join(c.stderr))
        self.assertTrue(os.path.isfile(self.sock))


if __name__ == "__main__":
    unittest.main()
