package app

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Components with a log level of their own (SPEC §11.4).
const (
	ComponentWebhook   = "webhook"
	ComponentWatcher   = "watcher"   // enrollment
	ComponentCollector = "collector" // profile statistics
	ComponentAdjuster  = "adjuster"  // resize
)

var zapLevels = map[string]zapcore.Level{"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel,
	"warn": zapcore.WarnLevel, "error": zapcore.ErrorLevel}

// componentLevel is the override of a component, or the process level.
func (o *Options) componentLevel(component string) string {
	override := map[string]string{ComponentWebhook: o.LogLevelWebhook, ComponentWatcher: o.LogLevelWatcher,
		ComponentCollector: o.LogLevelCollector, ComponentAdjuster: o.LogLevelAdjuster}[component]
	if override != "" {
		return strings.ToLower(override)
	}
	return strings.ToLower(o.LogLevel)
}

// staticFields parses --log-stdout-fields (a JSON object) into sorted key/value pairs.
func (o *Options) staticFields() ([]any, error) {
	if strings.TrimSpace(o.LogStdoutFields) == "" {
		return nil, nil
	}
	m := map[string]any{}
	if err := json.Unmarshal([]byte(o.LogStdoutFields), &m); err != nil {
		return nil, fmt.Errorf("--log-stdout-fields %q: must be a JSON object: %w", o.LogStdoutFields, err)
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

func (o *Options) newLogger(level string, w io.Writer, fields []any) logr.Logger {
	l := zap.New(zap.Level(zapLevels[level]), zap.UseDevMode(false), zap.WriteTo(w), func(zo *zap.Options) {
		zo.TimeEncoder = zapcore.ISO8601TimeEncoder
		if o.LogFormat == "text" {
			zo.Encoder = zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
				TimeKey: "ts", LevelKey: "level", NameKey: "logger", MessageKey: "msg",
				EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder,
			})
		}
	})
	return l.WithValues(fields...)
}

// SetupLogging installs the process logger (--log-level, --log-format, --log-stdout,
// --log-stdout-fields) and returns one logger per component honoring its override.
func (o *Options) SetupLogging() (map[string]logr.Logger, error) {
	fields, err := o.staticFields()
	if err != nil {
		return nil, err
	}
	var w io.Writer = os.Stderr
	if !o.LogStdout {
		w = io.Discard
	}
	ctrl.SetLogger(o.newLogger(strings.ToLower(o.LogLevel), w, fields))
	logs := map[string]logr.Logger{}
	for _, c := range []string{ComponentWebhook, ComponentWatcher, ComponentCollector, ComponentAdjuster} {
		logs[c] = o.newLogger(o.componentLevel(c), w, fields).WithName(c)
	}
	return logs, nil
}
