package resize

// Profile-level skip reasons of SPEC §8.1 (ballast.resize.skipped{reason} with empty
// policy and namespace). The per-pod reasons of §8.2 are the sizing.Reason* constants.
const (
	// ReasonKillSwitch: the kill switch is active (§10).
	ReasonKillSwitch = "kill_switch"
	// ReasonNotReady: the profile's meetsThreshold is false.
	ReasonNotReady = "not_ready"
	// ReasonNoPolicy: the profile has no policyRef, or its policy was deleted.
	ReasonNoPolicy = "no_policy"
	// ReasonInvalidPolicy: the profile's policy does not validate.
	ReasonInvalidPolicy = "invalid_policy"
)
