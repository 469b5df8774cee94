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
