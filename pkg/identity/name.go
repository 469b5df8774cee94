package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

const (
	// MaxNameLength is the longest valid DNS-1123 subdomain, and so the longest profile name.
	MaxNameLength = 253

	// maxReadable is the length the sanitized policy name is cut to in a discriminator.
	maxReadable = 24
	// hashPartLength is len("-" + hash8) inside a hashed profile name.
	hashPartLength = 9
)

// PolicyKey is the store and hashing key of a policy: "Kind/namespace/name", with an empty
// namespace for a ClusterResourcePolicy (ClusterResourcePolicy//default).
func PolicyKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// Discriminator is a policy's part of every profile name it governs (SPEC §3.5):
// sanitize(name) cut to 24 characters and trimmed of "-" (or "policy" when nothing is left),
// then "-" and the first 8 hex characters of SHA-256 of PolicyKey(kind, namespace, name).
// Profiles without a policy use ballastv1.NoPolicy instead.
func Discriminator(kind, namespace, name string) string {
	readable := Sanitize(name)
	if len(readable) > maxReadable {
		readable = readable[:maxReadable]
	}
	readable = strings.Trim(readable, "-")
	if readable == "" {
		readable = "policy"
	}
	return readable + "-" + hexSHA256(PolicyKey(kind, namespace, name))[:8]
}

// ProfileName names the WorkloadProfile of a tuple under a policy discriminator (SPEC §3.6).
// tupleLabels and selectorLabels are the maps returned by Tuple for the same identityLabels;
// discriminator is Discriminator(...) or ballastv1.NoPolicy.
//
// The result is a valid DNS-1123 subdomain whenever the present label values are valid
// Kubernetes label values (they start with an alphanumeric), and distinct selectorLabels
// yield distinct names under one discriminator.
func ProfileName(identityLabels []string, tupleLabels, selectorLabels map[string]string, discriminator string) string {
	segments := make([]string, len(identityLabels))
	needHash := false
	for i, key := range identityLabels {
		value := tupleLabels[key]
		segments[i] = Sanitize(value)
		if selectorLabels[key] == ballastv1.MissingSentinel {
			continue // the placeholder stands in for a missing label
		}
		// A present value that sanitizing would change, that could be confused with the
		// segment separator, or that spells the placeholder, is not recoverable from the
		// readable part alone: the hash keeps such tuples apart.
		if segments[i] != value || strings.Contains(value, "--") || value == Placeholder(key) {
			needHash = true
		}
	}
	tuple := strings.Join(segments, "--")
	suffix := "--" + discriminator
	if len(tuple)+len(suffix) > MaxNameLength {
		needHash = true
	}
	if !needHash {
		return tuple + suffix
	}
	if limit := MaxNameLength - hashPartLength - len(suffix); len(tuple) > limit {
		tuple = tuple[:max(limit, 0)]
	}
	tuple = strings.TrimRight(tuple, "-")
	return tuple + "-" + hexSHA256(canonical(identityLabels, selectorLabels))[:8] + suffix
}

// MeasurementHash is the store namespace of a profile (SPEC §3.7): the first 16 hex
// characters of SHA-256 over canonical(selectorLabels) + "\x00policy=" + policyKey + "\n".
// policyKey is PolicyKey(kind, namespace, name), or "" when no policy governs the profile.
func MeasurementHash(identityLabels []string, selectorLabels map[string]string, policyKey string) string {
	return hexSHA256(canonical(identityLabels, selectorLabels) + "\x00policy=" + policyKey + "\n")[:16]
}

// canonical is the identityLabels-ordered concatenation of key=selectorLabels[key]\n.
func canonical(identityLabels []string, selectorLabels map[string]string) string {
	var b strings.Builder
	for _, key := range identityLabels {
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(selectorLabels[key])
		b.WriteByte('\n')
	}
	return b.String()
}

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
