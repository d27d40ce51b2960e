"""The JSON-line logger: one object per line, the host's level labels, level filtering."""
import io
import json
import os
import unittest
from unittest import mock

from ccm_provider_sdk import Logger
from ccm_provider_sdk.log import level_from_env


class LogTest(unittest.TestCase):
    def test_lines_are_json_objects_with_the_host_fields(self):
        out = io.StringIO()
        log = Logger("example", stream=out, level="trace").with_fields(component="x")
        log.info("instance created", node="n1", size=3, when=object())
        line = json.loads(out.getvalue())
        self.assertEqual({k: line[k] for k in ("level", "msg", "name", "component", "node", "size")},
                         {"level": "info", "msg": "instance created", "name": "example", "component": "x", "node": "n1", "size": 3})
        self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertIsInstance(line["when"], str)

    def test_levels_below_the_minimum_are_dropped(self):
        out = io.StringIO()
        log = Logger("example", stream=out, level="warn")
        for level in ("trace", "debug", "info", "warn", "error"):
            getattr(log, level)("m")
        self.assertEqual([json.loads(s)["level"] for s in out.getvalue().splitlines()], ["warn", "error"])

    def test_level_from_the_host(self):
        for value, want in (("debug", 10), ("ERROR", 40), ("silent", 100), ("", 20), ("bogus", 20)):
            with mock.patch.dict(os.environ, {"CCM_PLUGIN_LOG_LEVEL": value}):
                self.assertEqual(level_from_env(), want, value)


if __name__ == "__main__":
    unittest.main()
