package memfloor

import (
	"fmt"
	"math/big"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Runtime is a container runtime's memory profile.
type Runtime string

// Runtimes a policy's spec.runtime.type names. Auto is resolved per container by Detect.
const (
	Generic Runtime = "generic"
	JVM     Runtime = "jvm"
	Go      Runtime = "go"
	Node    Runtime = "node"
	Python  Runtime = "python"
	Auto    Runtime = "auto"
)

const mi = 1 << 20

// Non-heap allowances, in bytes (docs/benchmarks.md "Runtime memory floors" measures them).
const (
	// NonHeapJVM covers metaspace, code cache, thread stacks, GC structures and the
	// launcher of a small JVM (measured: 36–44 MiB RSS above a touched 64 MiB heap).
	NonHeapJVM = 48 * mi
	// GoMinMargin is the least a GOMEMLIMIT floor adds (GOMEMLIMIT is a soft limit that
	// counts the Go runtime's own memory, but not memory outside it, e.g. cgo).
	GoMinMargin = 8 * mi
	// NonHeapNode covers V8's new space, code, and the node binary above old space.
	NonHeapNode = 64 * mi
)

// DefaultMarginPercent is the margin of a blank runtime.margin.
const DefaultMarginPercent = 5

// ShrinkNeedsRestart reports whether memory of rt must not be shrunk in place: a JVM
// never returns a heap it sized at start, so a lower limit only invites an OOM kill.
func ShrinkNeedsRestart(rt Runtime) bool { return rt == JVM }

// Floor is what one container's runtime settings imply.
type Floor struct {
	// Runtime is the container's runtime (Auto resolved by Detect).
	Runtime Runtime
	// Bytes is the floor; Has is false when the settings imply none.
	Bytes int64
	Has   bool
	// Source names the setting read ("JAVA_TOOL_OPTIONS -Xmx512m", "args --max-old-space-size=256").
	Source string
	// Why shows the arithmetic ("heap 512Mi + non-heap 48Mi, +5%").
	Why string
	// Note says why there is no floor when one might be expected (valueFrom, unparseable
	// option, MaxRAMPercentage without a limit, python); empty otherwise.
	Note string
}

// For computes the floor of c under rt with margin (a percentage, e.g. 5 for 5 %).
// limitBytes is the container's current memory limit (0 when none); only a
// MaxRAMPercentage floor reads it.
func For(rt Runtime, c *corev1.Container, margin *big.Rat, limitBytes int64) Floor {
	if c == nil {
		return Floor{Runtime: Generic}
	}
	if rt == "" {
		rt = Generic
	}
	if rt == Auto {
		rt = Detect(c)
	}
	if margin == nil {
		margin = big.NewRat(DefaultMarginPercent, 1)
	}
	f := Floor{Runtime: rt}
	switch rt {
	case JVM:
		jvmFloor(&f, c, margin, limitBytes)
	case Go:
		goFloor(&f, c, margin)
	case Node:
		nodeFloor(&f, c, margin)
	case Python:
		f.Note = "python: no heap cap to read, sized like generic"
	}
	return f
}

// Detect resolves Auto from image-free signals: the JVM's option variables or a java
// command or -Xmx argument ⇒ jvm; GOMEMLIMIT ⇒ go; NODE_OPTIONS, a node command or
// --max-old-space-size ⇒ node; a python command ⇒ python; else generic.
func Detect(c *corev1.Container) Runtime {
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	tokens := commandTokens(c)
	first := ""
	if len(tokens) > 0 {
		first = base(tokens[0])
	}
	has := func(prefix string) bool {
		for _, t := range tokens {
			if strings.HasPrefix(t, prefix) {
				return true
			}
		}
		return false
	}
	switch {
	case env["JAVA_TOOL_OPTIONS"] || env["JDK_JAVA_OPTIONS"] || first == "java" || has("-Xmx") || has("-XX:MaxRAMPercentage="):
		return JVM
	case env["GOMEMLIMIT"]:
		return Go
	case env["NODE_OPTIONS"] || first == "node" || first == "nodejs" || has("--max-old-space-size=") || has("--max_old_space_size="):
		return Node
	case strings.HasPrefix(first, "python"):
		return Python
	}
	return Generic
}

func base(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// commandTokens splits command and args into whitespace-separated tokens (a shell's
// "-c" string included), in order.
func commandTokens(c *corev1.Container) []string {
	var out []string
	for _, part := range append(append([]string{}, c.Command...), c.Args...) {
		out = append(out, strings.Fields(part)...)
	}
	return out
}

// envValue returns the literal value of name, whether it is set, and whether it comes
// from valueFrom (unknown at admission). The last entry of a name wins, as in the kubelet.
func envValue(c *corev1.Container, name string) (value string, set, fromRef bool) {
	for _, e := range c.Env {
		if e.Name != name {
			continue
		}
		value, set, fromRef = e.Value, true, e.ValueFrom != nil
	}
	return value, set, fromRef
}

// withMargin returns ceil(b × (1 + margin/100)).
func withMargin(b int64, margin *big.Rat) int64 {
	r := new(big.Rat).SetInt64(b)
	f := new(big.Rat).Add(big.NewRat(1, 1), new(big.Rat).Quo(margin, big.NewRat(100, 1)))
	r.Mul(r, f)
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return maxBytes
	}
	return q.Int64()
}

// maxBytes caps every floor: no floor is larger than 1 PiB, whatever an option says.
const maxBytes = 1 << 50

func capBytes(b int64) int64 {
	if b > maxBytes || b < 0 {
		return maxBytes
	}
	return b
}

// Bytes renders b the way a reader of explain wants it: "512Mi", "1.5Gi" rounded, or bytes.
func Bytes(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGi", b>>30)
	case b >= mi && b%mi == 0:
		return fmt.Sprintf("%dMi", b>>20)
	case b >= mi:
		return fmt.Sprintf("%.1fMi", float64(b)/mi)
	}
	return fmt.Sprintf("%d", b)
}

func marginText(m *big.Rat) string { return m.FloatString(1) + "%" }
