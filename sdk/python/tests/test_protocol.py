"""The start-up decision: cookie, protocol negotiation, endpoints."""
import unittest

from ccm_provider_sdk import protocol as p

COOKIE = {p.MAGIC_COOKIE_KEY: p.MAGIC_COOKIE_VALUE}


class ProtocolTest(unittest.TestCase):
    def test_version_list_drops_invalid_entries(self):
        self.assertEqual(p.parse_version_list("1, 2,x,,-3,٣"), [1, 2])
        self.assertEqual(p.parse_version_list(""), [])
        self.assertEqual(p.parse_version_list(None), [])

    def test_negotiation_picks_the_highest_common_version(self):
        self.assertEqual(p.negotiate_version([1, 2], [1]), 1)
        self.assertEqual(p.negotiate_version([1, 2], [1, 2]), 2)
        self.assertIsNone(p.negotiate_version([2], [1]))

    def test_handshake_line(self):
        self.assertEqual(p.format_handshake(1, "/run/x.sock"), "CCMPLUGIN|1|1|unix|/run/x.sock|grpc")

    def test_unix_socket_path(self):
        self.assertEqual(p.unix_socket_path("unix:///run/x.sock"), "/run/x.sock")
        self.assertEqual(p.unix_socket_path("unix:/run/x.sock"), "/run/x.sock")
        self.assertIsNone(p.unix_socket_path("unix://relative.sock"))
        self.assertIsNone(p.unix_socket_path("unix:////double"))
        self.assertIsNone(p.unix_socket_path("tcp://127.0.0.1:1"))

    def test_exec_mode(self):
        env = {**COOKIE, p.ENV_PROTOCOL_VERSIONS: "1,2", p.ENV_ENDPOINT: "unix:///tmp/a.sock", p.ENV_INSTANCE_ID: "nonce"}
        self.assertEqual(p.resolve_mode(env, ["--endpoint=unix:///ignored.sock"]), p.Mode(True, "/tmp/a.sock", 1, "nonce"))

    def test_exec_mode_refusals(self):
        with self.assertRaisesRegex(p.ModeError, r"the host offered 2: upgrade the plugin"):
            p.resolve_mode({**COOKIE, p.ENV_PROTOCOL_VERSIONS: "2", p.ENV_ENDPOINT: "unix:///a.sock"}, [])
        with self.assertRaisesRegex(p.ModeError, r"the host offered none: the host set no valid CCM_PLUGIN_PROTOCOL_VERSIONS"):
            p.resolve_mode({**COOKIE, p.ENV_ENDPOINT: "unix:///a.sock"}, [])
        with self.assertRaisesRegex(p.ModeError, r"CCM_PLUGIN_ENDPOINT='tcp://x' is not a unix"):
            p.resolve_mode({**COOKIE, p.ENV_PROTOCOL_VERSIONS: "1", p.ENV_ENDPOINT: "tcp://x"}, [])

    def test_sidecar_mode_sources_in_order(self):
        m = p.resolve_mode({}, ["--endpoint", "unix:///args.sock"])
        self.assertEqual((m.exec, m.socket_path, m.protocol), (False, "/args.sock", 1))
        self.assertRegex(m.instance_id, r"^[0-9a-f-]{36}$")
        self.assertNotEqual(m.instance_id, p.resolve_mode({}, ["--endpoint=unix:///args.sock"]).instance_id)
        env = {p.ENV_SIDECAR_ENDPOINT: "unix:///env.sock"}
        self.assertEqual(p.resolve_mode(env, ["--endpoint=unix:///args.sock"]).socket_path, "/env.sock")
        self.assertEqual(p.resolve_mode(env, [], "unix:///option.sock").socket_path, "/option.sock")
        with self.assertRaisesRegex(p.ModeError, "is not a unix:///absolute/path endpoint"):
            p.resolve_mode({}, ["--endpoint=/no/scheme.sock"])

    def test_refused_by_hand_or_with_a_wrong_cookie(self):
        with self.assertRaisesRegex(p.ModeError, "not by hand"):
            p.resolve_mode({}, [])
        # A wrong cookie is not sidecar mode, even with an endpoint.
        with self.assertRaisesRegex(p.ModeError, "not by hand"):
            p.resolve_mode({p.MAGIC_COOKIE_KEY: "wrong"}, ["--endpoint=unix:///a.sock"])


if __name__ == "__main__":
    unittest.main()
