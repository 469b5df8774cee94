package app

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ballastk8s/ballast/pkg/logging"
)

// Components with a log level of their own (SPEC §11.4), and the controllers logging at
// the process level.
const (
	ComponentWebhook   = "webhook"
	ComponentWatcher   = "watcher"   // enrollment
	ComponentCollector = "collector" // profile statistics
	ComponentAdjuster  = "adjuster"  // resize
	ComponentConfig    = "config"    // BallastConfig and the kill switch
	ComponentPolicies  = "policies"  // policy validity
)

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
	kv, err := logging.Fields(o.LogStdoutFields)
	if err != nil {
		return nil, fmt.Errorf("--log-stdout-fields %w", err)
	}
	return kv, nil
}

func (o *Options) newLogger(level string, w io.Writer, fields []any) logr.Logger {
	return logging.New(level, o.LogFormat, w, fields...)
}

// SetupLogging installs the process logger (--log-level, --log-format, --log-stdout,
// --log-stdout-fields) writing to stderr and returns one logger per component honoring
// its override.
func (o *Options) SetupLogging() (map[string]logr.Logger, error) {
	var w io.Writer = os.Stderr
	if !o.LogStdout {
		w = io.Discard
	}
	return o.SetupLoggingTo(w)
}

// SetupLoggingTo is SetupLogging writing to w.
func (o *Options) SetupLoggingTo(w io.Writer) (map[string]logr.Logger, error) {
	fields, err := o.staticFields()
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(o.newLogger(strings.ToLower(o.LogLevel), w, fields))
	logs := map[string]logr.Logger{}
	for _, c := range []string{ComponentWebhook, ComponentWatcher, ComponentCollector, ComponentAdjuster, ComponentConfig, ComponentPolicies} {
		logs[c] = o.newLogger(o.componentLevel(c), w, fields).WithName(c)
	}
	return logs, nil
}
