// Package logging builds the structured logger both binaries use (SPEC §11.4): zap behind
// logr, JSON or console output with ISO8601 times, the four named levels, static fields,
// and Warn, the one level logr cannot express by itself.
package logging

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Levels are the accepted --log-level values, most verbose first.
var Levels = []string{"debug", "info", "warn", "error"}

var zapLevels = map[string]zapcore.Level{"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel,
	"warn": zapcore.WarnLevel, "error": zapcore.ErrorLevel}

// ValidLevel reports whether s (any case) is one of Levels.
func ValidLevel(s string) bool {
	_, ok := zapLevels[strings.ToLower(s)]
	return ok
}

// ValidFormat reports whether s is json or text.
func ValidFormat(s string) bool { return s == "json" || s == "text" }

// Fields parses a JSON object of static fields ("" = none) into key/value pairs sorted by key.
func Fields(obj string) ([]any, error) {
	if strings.TrimSpace(obj) == "" {
		return nil, nil
	}
	m := map[string]any{}
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		return nil, fmt.Errorf("%q: must be a JSON object: %w", obj, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		kv = append(kv, k, m[k])
	}
	return kv, nil
}

// New returns a logger writing lines at level or above to w, as JSON (format "json") or
// console text ("text"), each line carrying fields. Unknown levels mean info.
func New(level, format string, w io.Writer, fields ...any) logr.Logger {
	lvl, ok := zapLevels[strings.ToLower(level)]
	if !ok {
		lvl = zapcore.InfoLevel
	}
	l := crzap.New(crzap.Level(lvl), crzap.UseDevMode(false), crzap.WriteTo(w), func(zo *crzap.Options) {
		zo.TimeEncoder = zapcore.ISO8601TimeEncoder
		if format == "text" {
			zo.Encoder = zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
				TimeKey: "ts", LevelKey: "level", NameKey: "logger", MessageKey: "msg",
				EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder,
			})
		}
	})
	return l.WithValues(fields...)
}

// Warn logs msg at warn level through l's zap core, with l's name and values. logr has only
// info (with verbosity) and error; a logger not built by New (or derived from one) gets
// the line at info instead.
func Warn(l logr.Logger, msg string, kv ...any) {
	if u, ok := l.GetSink().(zapr.Underlier); ok {
		z := u.GetUnderlying().WithOptions(zap.AddCallerSkip(1))
		z.Sugar().Warnw(msg, kv...)
		return
	}
	l.WithCallDepth(1).Info(msg, kv...)
}
