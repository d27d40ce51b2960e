"""The stdout guard of exec mode: stdout carries exactly the handshake line.
guard_stdout() moves the real stdout to a private descriptor and points fd 1
(and sys.stdout) at stderr, so a stray print, or a C library writing to fd 1,
cannot corrupt the host's read of the handshake. The package does it on
import when the magic cookie is set, before the provider's own code runs."""
import os
import sys

_handshake_fd = None


def guard_stdout():
    """Idempotent."""
    global _handshake_fd
    if _handshake_fd is not None:
        return
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        pass
    _handshake_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def write_handshake(line):
    """Writes the one line on the real stdout and closes it (the host then
    sees EOF there; nothing else is ever written to it)."""
    guard_stdout()
    data = (line + "\n").encode()
    while data:
        data = data[os.write(_handshake_fd, data):]
    os.close(_handshake_fd)
