package memfloor

import (
	"math/big"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseJVMSize(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    int64
		wantErr bool
	}{
		"bytes":            {in: "1048576", want: 1 << 20},
		"k":                {in: "512k", want: 512 << 10},
		"K":                {in: "512K", want: 512 << 10},
		"m":                {in: "512m", want: 512 << 20},
		"g":                {in: "2G", want: 2 << 30},
		"t":                {in: "1t", want: 1 << 40},
		"empty":            {in: "", wantErr: true},
		"suffix only":      {in: "m", wantErr: true},
		"fraction":         {in: "1.5g", wantErr: true},
		"negative":         {in: "-1m", wantErr: true},
		"unknown suffix":   {in: "5x", wantErr: true},
		"above a pebibyte": {in: "2048t", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseJVMSize(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseJVMSize(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseGOMEMLIMIT(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    int64
		ok      bool
		wantErr bool
	}{
		"bytes":        {in: "1048576", want: 1 << 20, ok: true},
		"B":            {in: "4096B", want: 4096, ok: true},
		"KiB":          {in: "64KiB", want: 64 << 10, ok: true},
		"MiB":          {in: "900MiB", want: 900 << 20, ok: true},
		"GiB":          {in: "2GiB", want: 2 << 30, ok: true},
		"TiB":          {in: "1TiB", want: 1 << 40, ok: true},
		"off":          {in: "off"},
		"SI is not Go": {in: "900M", wantErr: true},
		"Mi is not Go": {in: "900Mi", wantErr: true},
		"empty":        {in: "", wantErr: true},
		"negative":     {in: "-1", wantErr: true},
		"unit only":    {in: "MiB", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok, err := ParseGOMEMLIMIT(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want || ok != tc.ok {
				t.Fatalf("ParseGOMEMLIMIT(%q) = %d, %v, %v; want %d, %v, err %v", tc.in, got, ok, err, tc.want, tc.ok, tc.wantErr)
			}
		})
	}
}

func TestParseOldSpaceAndPercent(t *testing.T) {
	if got, err := ParseOldSpace("256"); err != nil || got != 256<<20 {
		t.Fatalf("ParseOldSpace(256) = %d, %v", got, err)
	}
	if got, err := ParseOldSpace("255.5"); err != nil || got != 256<<20 {
		t.Fatalf("ParseOldSpace(255.5) = %d, %v (a fraction rounds up)", got, err)
	}
	for _, bad := range []string{"", "x", "-5", "1.x"} {
		if _, err := ParseOldSpace(bad); err == nil {
			t.Errorf("ParseOldSpace(%q): no error", bad)
		}
	}
	if p, err := ParsePercent("75.0"); err != nil || p.Cmp(big.NewRat(75, 1)) != 0 {
		t.Fatalf("ParsePercent(75.0) = %v, %v", p, err)
	}
	for _, bad := range []string{"", "0", "101", "-5", "1e2", "abc"} {
		if _, err := ParsePercent(bad); err == nil {
			t.Errorf("ParsePercent(%q): no error", bad)
		}
	}
}

func env(kv ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestFor(t *testing.T) {
	five := big.NewRat(5, 1)
	cases := map[string]struct {
		rt      Runtime
		c       corev1.Container
		limit   int64
		want    int64 // 0: no floor
		runtime Runtime
		noteHas string
		source  string
	}{
		"jvm Xmx in JAVA_TOOL_OPTIONS": {rt: JVM, c: corev1.Container{Env: env("JAVA_TOOL_OPTIONS", "-Xss1m -Xmx512m")},
			want: withMargin(512<<20+NonHeapJVM, five), runtime: JVM, source: "JAVA_TOOL_OPTIONS -Xmx512m"},
		"jvm args win over env": {rt: JVM, c: corev1.Container{Env: env("JAVA_TOOL_OPTIONS", "-Xmx2g"), Args: []string{"-Xmx256m", "-jar", "app.jar"}},
			want: withMargin(256<<20+NonHeapJVM, five), runtime: JVM, source: "args -Xmx256m"},
		"jvm JDK_JAVA_OPTIONS after JAVA_TOOL_OPTIONS": {rt: JVM, c: corev1.Container{Env: env("JDK_JAVA_OPTIONS", "-XX:MaxHeapSize=1g", "JAVA_TOOL_OPTIONS", "-Xmx2g")},
			want: withMargin(1<<30+NonHeapJVM, five), runtime: JVM, source: "JDK_JAVA_OPTIONS -XX:MaxHeapSize=1g"},
		"jvm MaxRAMPercentage of the limit": {rt: JVM, c: corev1.Container{Env: env("JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=50")},
			limit: 1 << 30, want: withMargin(512<<20+NonHeapJVM, five), runtime: JVM},
		"jvm MaxRAMPercentage never raises": {rt: JVM, c: corev1.Container{Env: env("JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=95")},
			limit: 1 << 30, want: 1 << 30, runtime: JVM},
		"jvm MaxRAMPercentage without limit": {rt: JVM, c: corev1.Container{Env: env("JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=50")},
			runtime: JVM, noteHas: "without a memory limit"},
		"jvm Xmx wins over MaxRAMPercentage": {rt: JVM, c: corev1.Container{Env: env("JAVA_TOOL_OPTIONS", "-Xmx128m -XX:MaxRAMPercentage=90")},
			limit: 1 << 30, want: withMargin(128<<20+NonHeapJVM, five), runtime: JVM},
		"jvm valueFrom is unknown": {rt: JVM, c: corev1.Container{Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS",
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "opts"}}}}},
			runtime: JVM, noteHas: "valueFrom"},
		"jvm bad Xmx": {rt: JVM, c: corev1.Container{Args: []string{"-Xmx5x"}}, runtime: JVM, noteHas: "unreadable"},
		"go GOMEMLIMIT small uses +8Mi": {rt: Go, c: corev1.Container{Env: env("GOMEMLIMIT", "100MiB")},
			want: 108 << 20, runtime: Go, source: "GOMEMLIMIT=100MiB"},
		"go GOMEMLIMIT large uses 5%": {rt: Go, c: corev1.Container{Env: env("GOMEMLIMIT", "1GiB")},
			want: withMargin(1<<30, five), runtime: Go},
		"go off": {rt: Go, c: corev1.Container{Env: env("GOMEMLIMIT", "off")}, runtime: Go, noteHas: "off"},
		"node NODE_OPTIONS": {rt: Node, c: corev1.Container{Env: env("NODE_OPTIONS", "--max-old-space-size=256")},
			want: withMargin(256<<20+NonHeapNode, five), runtime: Node},
		"node args underscore": {rt: Node, c: corev1.Container{Command: []string{"node", "--max_old_space_size=512", "server.js"}},
			want: withMargin(512<<20+NonHeapNode, five), runtime: Node},
		"jvm args expand $(VAR) from env": {rt: JVM, c: corev1.Container{Env: env("HEAP", "256m"), Args: []string{"-Xmx$(HEAP)", "-jar", "app.jar"}},
			want: withMargin(256<<20+NonHeapJVM, five), runtime: JVM, source: "args -Xmx256m"},
		"jvm args referencing valueFrom": {rt: JVM, c: corev1.Container{Env: []corev1.EnvVar{{Name: "HEAP",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}, Args: []string{"-Xmx$(HEAP)"}},
			runtime: JVM, noteHas: "HEAP is set from valueFrom"},
		"node command with $$ escape": {rt: Node, c: corev1.Container{Command: []string{"node", "--max-old-space-size=128", "$$(x)"}},
			want: withMargin(128<<20+NonHeapNode, five), runtime: Node},
		"python has no floor": {rt: Python, c: corev1.Container{Command: []string{"python3"}}, runtime: Python, noteHas: "generic"},
		"auto detects jvm": {rt: Auto, c: corev1.Container{Command: []string{"/usr/bin/java", "-Xmx64m", "Main"}},
			want: withMargin(64<<20+NonHeapJVM, five), runtime: JVM},
		"auto detects go":     {rt: Auto, c: corev1.Container{Env: env("GOMEMLIMIT", "200MiB")}, want: withMargin(200<<20, five), runtime: Go},
		"auto generic":        {rt: Auto, c: corev1.Container{Command: []string{"/app"}}, runtime: Generic},
		"generic ignores Xmx": {rt: Generic, c: corev1.Container{Args: []string{"-Xmx1g"}}, runtime: Generic},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := For(tc.rt, &tc.c, five, tc.limit)
			if f.Runtime != tc.runtime {
				t.Errorf("runtime %q, want %q", f.Runtime, tc.runtime)
			}
			if tc.want == 0 && f.Has || tc.want != 0 && (!f.Has || f.Bytes != tc.want) {
				t.Errorf("floor %d (has %v), want %d; why %q note %q", f.Bytes, f.Has, tc.want, f.Why, f.Note)
			}
			if tc.noteHas != "" && !strings.Contains(f.Note, tc.noteHas) {
				t.Errorf("note %q, want it to mention %q", f.Note, tc.noteHas)
			}
			if tc.source != "" && f.Source != tc.source {
				t.Errorf("source %q, want %q", f.Source, tc.source)
			}
		})
	}
}

func TestShrinkNeedsRestart(t *testing.T) {
	for _, rt := range []Runtime{Generic, Go, Node, Python, Auto} {
		if ShrinkNeedsRestart(rt) {
			t.Errorf("%s: shrink needs restart", rt)
		}
	}
	if !ShrinkNeedsRestart(JVM) {
		t.Error("jvm: shrink in place allowed")
	}
}
