package identity

import (
	"strings"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Tuple returns the identity tuple of a pod (SPEC §3.2). For every key of identityLabels,
// tupleLabels holds the pod's label value or, when the label is missing (absent or empty),
// the key's Placeholder; selectorLabels holds the value or the "--missing--" sentinel.
// Both maps always have exactly one entry per identity label.
func Tuple(identityLabels []string, podLabels map[string]string) (tupleLabels, selectorLabels map[string]string) {
	tupleLabels = make(map[string]string, len(identityLabels))
	selectorLabels = make(map[string]string, len(identityLabels))
	for _, key := range identityLabels {
		if v := podLabels[key]; v != "" {
			tupleLabels[key] = v
			selectorLabels[key] = v
			continue
		}
		tupleLabels[key] = Placeholder(key)
		selectorLabels[key] = ballastv1.MissingSentinel
	}
	return tupleLabels, selectorLabels
}

// Placeholder is the tuple value of a missing identity label: "no" followed by the
// lowercased ASCII letters of the key segment after the last "/"
// (app.kubernetes.io/component ⇒ nocomponent, foo.bar.baz ⇒ nofoobarbaz).
func Placeholder(key string) string {
	seg := key[strings.LastIndex(key, "/")+1:]
	var b strings.Builder
	b.Grow(2 + len(seg))
	b.WriteString("no")
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + ('a' - 'A'))
		}
	}
	return b.String()
}

// Sanitize lowercases ASCII letters, replaces every character outside [a-z0-9-] with "-"
// and trims leading and trailing "-" (SPEC §3.6). A multi-byte character becomes one "-".
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
