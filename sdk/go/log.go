package ccmsdk

import (
	"io"
	"log/slog"
	"os"
	"strings"
)

// Log levels beyond slog's: the host reads "trace" and "fatal" too.
const (
	LevelTrace = slog.Level(-8)
	LevelFatal = slog.Level(12)
	// levelSilent is above every level a record can have.
	levelSilent = slog.Level(100)
)

// LogLevelFromEnv is the level CCM_PLUGIN_LOG_LEVEL asks for (trace, debug,
// info, warn, error, fatal, silent); info when unset or unknown.
func LogLevelFromEnv() slog.Level {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(EnvLogLevel))) {
	case "trace":
		return LevelTrace
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	case "fatal":
		return LevelFatal
	case "silent":
		return levelSilent
	}
	return slog.LevelInfo
}

func levelLabel(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	case l < LevelFatal:
		return "error"
	}
	return "fatal"
}

// NewLogger writes JSON lines the host forwards into its own log with the
// plugin's name and pid: {"time":"…","level":"info","msg":"…","name":"<name>",…fields}.
// The level is a lowercase label (trace..fatal). Keep msg constant text and
// put what varies into attributes: log.Info("instance created", "node", n).
// w is where lines go (nil: stderr; never stdout, which carries the handshake
// only); level nil means [LogLevelFromEnv].
func NewLogger(name string, w io.Writer, level slog.Leveler) *slog.Logger {
	if w == nil {
		w = os.Stderr
	}
	if level == nil {
		level = LogLevelFromEnv()
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.LevelKey {
				if l, ok := a.Value.Any().(slog.Level); ok {
					a.Value = slog.StringValue(levelLabel(l))
				}
			}
			return a
		},
	})
	return slog.New(h).With("name", name)
}
