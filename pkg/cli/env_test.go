package cli

import (
	"flag"
	"testing"
)

func TestApplyEnvThenCommandLineWins(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	level := fs.String("log-level", "info", "")
	port := fs.Int("webhook-port", 1, "")
	t.Setenv("BALLAST_LOG_LEVEL", "warn")
	t.Setenv("BALLAST_WEBHOOK_PORT", "9443")
	if err := ApplyEnv(fs, "BALLAST"); err != nil {
		t.Fatal(err)
	}
	if *level != "warn" || *port != 9443 {
		t.Fatalf("env not applied: %q %d", *level, *port)
	}
	if err := fs.Parse([]string{"--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	if *level != "debug" {
		t.Errorf("command line lost to env: %q", *level)
	}
}

func TestApplyEnvReportsBadValues(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("webhook-port", 1, "")
	t.Setenv("BALLAST_WEBHOOK_PORT", "many")
	if err := ApplyEnv(fs, "BALLAST"); err == nil {
		t.Error("accepted a non-number")
	}
}
