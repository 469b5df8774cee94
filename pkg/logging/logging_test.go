package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func lines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestWarnKeepsNameValuesAndLevel(t *testing.T) {
	var buf bytes.Buffer
	l := New("warn", "json", &buf, "cluster", "eu").WithName("webhook").WithValues("namespace", "shop")
	l.Info("not shown at warn")
	Warn(l, "kill switch active", "kill_switch", true)
	got := lines(t, &buf)
	if len(got) != 1 {
		t.Fatalf("lines = %v, want one warn line", got)
	}
	want := map[string]any{"level": "warn", "msg": "kill switch active", "logger": "webhook",
		"cluster": "eu", "namespace": "shop", "kill_switch": true}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, got[0][k], v, got[0])
		}
	}
}

func TestWarnFilteredAtError(t *testing.T) {
	var buf bytes.Buffer
	Warn(New("error", "json", &buf).WithName("x"), "dropped")
	if buf.Len() != 0 {
		t.Errorf("warn line at --log-level error: %q", buf.String())
	}
}

func TestWarnOnForeignLoggerFallsBackToInfo(t *testing.T) {
	var got string
	l := logr.New(&recordSink{msg: &got})
	Warn(l, "hello")
	if got != "hello" {
		t.Errorf("fallback logged %q", got)
	}
}

type recordSink struct{ msg *string }

func (recordSink) Init(logr.RuntimeInfo)              {}
func (recordSink) Enabled(int) bool                   { return true }
func (s recordSink) Info(_ int, msg string, _ ...any) { *s.msg = msg }
func (recordSink) Error(error, string, ...any)        {}
func (s recordSink) WithValues(...any) logr.LogSink   { return s }
func (s recordSink) WithName(string) logr.LogSink     { return s }

func TestFields(t *testing.T) {
	kv, err := Fields(`{"team":"p","cluster":"eu"}`)
	if err != nil || len(kv) != 4 || kv[0] != "cluster" || kv[2] != "team" {
		t.Errorf("Fields = %v, %v", kv, err)
	}
	if _, err := Fields(`["a"]`); err == nil {
		t.Error("accepted a JSON list")
	}
}
