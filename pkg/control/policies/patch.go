package policies

import (
	"encoding/json"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// mustStatusPatch renders a merge patch that sets the whole status: both fields are owned
// by Ballast, and conditions is a list a merge patch replaces anyway.
func mustStatusPatch(s *ballastv1.ResourcePolicyStatus) []byte {
	b, err := json.Marshal(map[string]any{"status": map[string]any{
		"profileDiscriminator": s.ProfileDiscriminator,
		"priority":             s.Priority,
		"conditions":           s.Conditions,
	}})
	if err != nil {
		panic(err) // plain strings and conditions always marshal
	}
	return b
}
