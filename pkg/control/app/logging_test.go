package app

import (
	"bytes"
	"strings"
	"testing"
)

func TestComponentLevelsAndStaticFields(t *testing.T) {
	o := NewOptions()
	o.LogLevel, o.LogLevelWebhook = "info", "debug"
	o.LogStdoutFields = `{"cluster":"prod-eu","team":"platform"}`
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	fields, err := o.staticFields()
	if err != nil {
		t.Fatal(err)
	}
	var web, watcher bytes.Buffer
	lw := o.newLogger(o.componentLevel(ComponentWebhook), &web, fields)
	lr := o.newLogger(o.componentLevel(ComponentWatcher), &watcher, fields)
	lw.V(1).Info("resolved policy")
	lr.V(1).Info("resolved policy")
	lr.Info("pod un-enrolled")
	if !strings.Contains(web.String(), `"msg":"resolved policy"`) {
		t.Errorf("webhook at debug did not log a debug line: %q", web.String())
	}
	if strings.Contains(watcher.String(), "resolved policy") || !strings.Contains(watcher.String(), "pod un-enrolled") {
		t.Errorf("watcher at info: %q", watcher.String())
	}
	if !strings.Contains(watcher.String(), `"cluster":"prod-eu"`) || !strings.Contains(watcher.String(), `"team":"platform"`) {
		t.Errorf("static fields missing: %q", watcher.String())
	}
}

func TestValidateRejects(t *testing.T) {
	cases := map[string]func(*Options){
		"unknown level":            func(o *Options) { o.LogLevel = "verbose" },
		"unknown component level":  func(o *Options) { o.LogLevelCollector = "trace" },
		"static fields not object": func(o *Options) { o.LogStdoutFields = `["a"]` },
		"unknown dry-run":          func(o *Options) { o.DryRun = "everything" },
		"unknown cert mode":        func(o *Options) { o.WebhookCertMode = "vault" },
		"unknown log format":       func(o *Options) { o.LogFormat = "xml" },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			mod(o)
			if err := o.Validate(); err == nil {
				t.Error("accepted")
			}
		})
	}
}
