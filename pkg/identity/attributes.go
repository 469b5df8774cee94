package identity

import (
	"strconv"
	"strings"
)

// ProfileAttribute is the metric attribute carrying the profile name. It is reserved: an
// identity label whose short key would be "profile" uses its full key instead.
const ProfileAttribute = "profile"

// Attribute is one metric attribute (a Prometheus label name and value).
type Attribute struct {
	Key   string
	Value string
}

// AttributeKeys returns the metric attribute key of every identity label, in identityLabels
// order (SPEC §11.1): the label-key segment after the last "/", lowercased, with every
// character outside [a-z0-9_] replaced by "_" (app.kubernetes.io/name ⇒ name,
// example.com/business-unit ⇒ business_unit). Keys that collide with each other or with
// ProfileAttribute use the whole sanitized label key instead (app.kubernetes.io/name ⇒
// app_kubernetes_io_name). Should even those collide, later ones get "_2", "_3", … so the
// keys are always distinct, as a metric vector requires.
func AttributeKeys(identityLabels []string) []string {
	short := make([]string, len(identityLabels))
	count := map[string]int{ProfileAttribute: 1}
	for i, label := range identityLabels {
		short[i] = attributeKey(label[strings.LastIndex(label, "/")+1:])
		count[short[i]]++
	}
	keys := make([]string, len(identityLabels))
	used := map[string]bool{ProfileAttribute: true}
	for i, label := range identityLabels {
		key := short[i]
		if count[key] > 1 {
			key = attributeKey(label)
		}
		for n := 2; used[key]; n++ {
			key = attributeKey(label) + "_" + strconv.Itoa(n)
		}
		used[key] = true
		keys[i] = key
	}
	return keys
}

// ProfileAttributes returns one attribute per identity label, in identityLabels order, with
// the key from AttributeKeys and the tupleLabels value. The caller adds ProfileAttribute
// when the profile name is known.
func ProfileAttributes(identityLabels []string, tupleLabels map[string]string) []Attribute {
	keys := AttributeKeys(identityLabels)
	attrs := make([]Attribute, len(identityLabels))
	for i, label := range identityLabels {
		attrs[i] = Attribute{Key: keys[i], Value: tupleLabels[label]}
	}
	return attrs
}

// attributeKey lowercases s and replaces every character outside [a-z0-9_] with "_".
func attributeKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
