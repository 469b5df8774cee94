package app

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// TestStatusRefreshInterval: --status-refresh-interval defaults to a minute, takes 0 (every
// change written) and rejects a negative interval.
func TestStatusRefreshInterval(t *testing.T) {
	parse := func(args ...string) *Options {
		t.Helper()
		o := NewOptions()
		fs := flag.NewFlagSet("ballast-control", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := parse(); o.StatusRefreshInterval != time.Minute {
		t.Errorf("default --status-refresh-interval = %v, want 1m", o.StatusRefreshInterval)
	}
	if o := parse("--status-refresh-interval=0"); o.StatusRefreshInterval != 0 || o.Validate() != nil {
		t.Errorf("--status-refresh-interval=0: %v, %v", o.StatusRefreshInterval, o.Validate())
	}
	err := parse("--status-refresh-interval=-1s").Validate()
	if err == nil || !strings.Contains(err.Error(), "--status-refresh-interval") {
		t.Errorf("a negative interval validated: %v", err)
	}
}

// TestUnderstudyMaxHold: --understudy-max-hold defaults to an hour, reaches the Understudy
// options, and must be at least a second.
func TestUnderstudyMaxHold(t *testing.T) {
	o := NewOptions()
	if o.UnderstudyMaxHold != time.Hour || o.understudy().MaxHold != time.Hour {
		t.Errorf("default max-hold %v / %v, want 1h", o.UnderstudyMaxHold, o.understudy().MaxHold)
	}
	o.UnderstudyMaxHold = 0
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--understudy-max-hold") {
		t.Errorf("max-hold 0 validated: %v", err)
	}
}

// TestHistoryPrometheusStep: the backfill's step and rate window default to a minute and
// five minutes, and only whole seconds with a rate window of at least the step validate.
func TestHistoryPrometheusStep(t *testing.T) {
	cases := map[string]struct {
		args []string
		bad  string // the flag the error names; "" validates
	}{
		"defaults":              {},
		"1s scrapes":            {args: []string{"--history-prometheus-step=1s", "--history-prometheus-rate-window=5s"}},
		"fractional step":       {args: []string{"--history-prometheus-step=1500ms"}, bad: "--history-prometheus-step"},
		"zero step":             {args: []string{"--history-prometheus-step=0s"}, bad: "--history-prometheus-step"},
		"window below step":     {args: []string{"--history-prometheus-step=2m", "--history-prometheus-rate-window=1m"}, bad: "--history-prometheus-rate-window"},
		"fractional window":     {args: []string{"--history-prometheus-rate-window=90500ms"}, bad: "--history-prometheus-rate-window"},
		"ignored without a URL": {args: []string{"--history-prometheus-step=0s"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			fs := flag.NewFlagSet("ballast-control", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.AddFlags(fs)
			args := c.args
			if name != "ignored without a URL" {
				args = append([]string{"--history-prometheus-url=http://p:9090"}, args...)
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			if name == "defaults" && (o.HistoryPrometheusStep != time.Minute || o.HistoryPrometheusRateWindow != 5*time.Minute) {
				t.Errorf("defaults %v / %v, want 1m / 5m", o.HistoryPrometheusStep, o.HistoryPrometheusRateWindow)
			}
			err := o.Validate()
			switch {
			case c.bad == "" && err != nil:
				t.Errorf("did not validate: %v", err)
			case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
				t.Errorf("error %v, want one naming %s", err, c.bad)
			}
		})
	}
}
