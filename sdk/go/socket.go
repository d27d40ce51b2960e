package ccmsdk

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// staleProbeTimeout bounds the connect to an existing socket file; one that
// neither connects nor fails in time counts as answering (busy, not stale).
const staleProbeTimeout = time.Second

// socketAnswers reports whether something accepts connections at path.
func socketAnswers(path string) bool {
	c, err := net.DialTimeout("unix", path, staleProbeTimeout)
	if err == nil {
		c.Close()
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// prepareSocketPath makes path ready for bind: it must be absolute and
// short enough; an existing socket file nothing answers on (left by a
// crashed process) is removed; a live socket or another file is refused.
func prepareSocketPath(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("socket path %q is not absolute", path)
	}
	if len(path) > MaxUnixSocketPathBytes {
		return fmt.Errorf("socket path %q is longer than %d bytes; use a shorter directory", path, MaxUnixSocketPathBytes)
	}
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	if socketAnswers(path) {
		return fmt.Errorf("another process is listening on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// listenUnix binds path owner-only (0600). The umask is set around the bind:
// a chmod after it alone would leave a moment in which others could connect.
func listenUnix(path string) (net.Listener, error) {
	if err := prepareSocketPath(path); err != nil {
		return nil, err
	}
	previous := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(previous)
	if err != nil {
		return nil, err
	}
	// The socket file is ours to remove (stop does it, after the server is closed).
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		removeSocketFile(path)
		return nil, err
	}
	return l, nil
}

// removeSocketFile removes path if it is a socket; a missing file is fine.
func removeSocketFile(path string) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSocket != 0 {
		_ = os.Remove(path)
	}
}
