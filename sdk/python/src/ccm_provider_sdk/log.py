"""The JSON-line log the host forwards into its own: one object per line on
stderr, {"time","level","msg","name",...fields}, level a lowercase label
(trace..fatal). Keep msg constant text and put what varies into fields:
log.info("instance created", node=name)."""
import datetime
import json
import os
import sys
import threading

from .protocol import ENV_LOG_LEVEL

LEVELS = {"trace": 5, "debug": 10, "info": 20, "warn": 30, "error": 40, "fatal": 50, "silent": 100}


def level_from_env():
    """The level CCM_PLUGIN_LOG_LEVEL asks for; info when unset or unknown."""
    return LEVELS.get(os.environ.get(ENV_LOG_LEVEL, "").strip().lower(), LEVELS["info"])


class Logger:
    """Writes to `stream` (default: stderr at the time of the call; never
    stdout, which carries the handshake only) at `level` and above (default
    level_from_env()). Fields that JSON cannot hold are written as str()."""

    def __init__(self, name, stream=None, level=None, **fields):
        self.name = name
        self.stream = stream
        self.min = level_from_env() if level is None else (LEVELS[level] if isinstance(level, str) else level)
        self.fields = fields
        self._lock = threading.Lock()

    def with_fields(self, **fields):
        """A logger adding these fields to every line."""
        return Logger(self.name, self.stream, self.min, **{**self.fields, **fields})

    def enabled(self, level):
        return LEVELS[level] >= self.min

    def log(self, level, msg, **fields):
        if not self.enabled(level):
            return
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        line = json.dumps({"time": now, "level": level, "msg": msg, "name": self.name, **self.fields, **fields}, default=str)
        stream = self.stream or sys.stderr
        with self._lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):
                pass  # The host is gone (EPIPE) or the stream closed: a log line must not fail the caller.

    def trace(self, msg, **fields):
        self.log("trace", msg, **fields)

    def debug(self, msg, **fields):
        self.log("debug", msg, **fields)

    def info(self, msg, **fields):
        self.log("info", msg, **fields)

    def warn(self, msg, **fields):
        self.log("warn", msg, **fields)

    def error(self, msg, **fields):
        self.log("error", msg, **fields)
