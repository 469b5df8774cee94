package memfloor

import (
	"math/big"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func FuzzParseJVMSize(f *testing.F) {
	for _, s := range []string{"512m", "2G", "1048576", "", "m", "-1k", "99999999999999t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseJVMSize(s)
		if err == nil && (n < 0 || n > maxBytes) {
			t.Fatalf("ParseJVMSize(%q) = %d out of range", s, n)
		}
	})
}

func FuzzParseGOMEMLIMIT(f *testing.F) {
	for _, s := range []string{"off", "100MiB", "1GiB", "4096B", "12", "", "1.5GiB", "MiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok, err := ParseGOMEMLIMIT(s)
		if err != nil && ok || n < 0 || n > maxBytes || !ok && n != 0 {
			t.Fatalf("ParseGOMEMLIMIT(%q) = %d, %v, %v", s, n, ok, err)
		}
	})
}

func FuzzParseOldSpace(f *testing.F) {
	for _, s := range []string{"256", "255.5", "", ".", "1.", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseOldSpace(s)
		if err == nil && (n < 0 || n > maxBytes) {
			t.Fatalf("ParseOldSpace(%q) = %d", s, n)
		}
	})
}

// FuzzFor feeds arbitrary option strings through every runtime: no panic, a floor is
// never negative, and a MaxRAMPercentage-only floor never exceeds the limit.
func FuzzFor(f *testing.F) {
	f.Add("-Xmx512m -XX:MaxRAMPercentage=75", "--max-old-space-size=256", "1GiB", int64(1<<30))
	f.Add("-Xmx", "--max-old-space-size=", "off", int64(0))
	f.Fuzz(func(t *testing.T, jvm, node, gomem string, limit int64) {
		c := &corev1.Container{Env: env("JAVA_TOOL_OPTIONS", jvm, "NODE_OPTIONS", node, "GOMEMLIMIT", gomem), Args: []string{jvm}}
		for _, rt := range []Runtime{JVM, Go, Node, Python, Generic, Auto} {
			fl := For(rt, c, big.NewRat(5, 1), limit)
			if fl.Bytes < 0 || fl.Bytes > maxBytes+maxBytes/10 {
				t.Fatalf("%s: floor %d out of range", rt, fl.Bytes)
			}
			if fl.Has && fl.Note != "" || !fl.Has && rt != Generic && fl.Runtime != Generic && fl.Note == "" {
				t.Fatalf("%s: has %v but note %q", rt, fl.Has, fl.Note)
			}
		}
	})
}
