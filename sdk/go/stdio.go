package ccmsdk

import (
	"os"

	"golang.org/x/sys/unix"
)

// In exec mode stdout carries exactly one line, the handshake. The guard
// points fd 1 (and os.Stdout) at stderr, so no later write, by this program,
// a library or a child process inheriting fd 1, can reach the host's stdout
// pipe; the pipe is kept on a private descriptor for the handshake line.
var handshakeOut *os.File

// guardStdout runs once, at package initialisation when the magic cookie
// matches: the SDK is initialised before the provider's main package, so
// output in the provider's init functions cannot reach stdout either.
func guardStdout() {
	if handshakeOut != nil {
		return
	}
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return // No stdout at all; the handshake write will fail and say so.
	}
	if err := unix.Dup2(2, 1); err != nil {
		_ = unix.Close(fd)
		return
	}
	handshakeOut = os.NewFile(uintptr(fd), "handshake")
	os.Stdout = os.Stderr
}

func init() {
	if os.Getenv(MagicCookieKey) == MagicCookieValue {
		guardStdout()
	}
}

// writeHandshake writes the handshake line and a newline to the real stdout.
func writeHandshake(line string) error {
	out := handshakeOut
	if out == nil {
		out = os.Stdout
	}
	_, err := out.WriteString(line + "\n")
	return err
}
