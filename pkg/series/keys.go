package series

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Resources and signals a series can carry.
const (
	ResourceCPU              = "cpu"
	ResourceMemory           = "memory"
	ResourceEphemeralStorage = "ephemeral-storage"

	// SignalUsage is the sampled usage (cpu rate, memory working set, storage used).
	SignalUsage = "usage"
	// SignalPeak is the per-interval peak (memory.peak) behind the max aggregation.
	SignalPeak = "peak"
)

// KeyPrefix starts every key Ballast writes.
const KeyPrefix = "ballast"

// SeriesID names one series: the samples of one signal of one resource of one container of
// one profile.
type SeriesID struct {
	// Profile is the profile's measurementHash (SPEC §3.7), lowercase hex.
	Profile string
	// Container is the container name; "" is the pod-level series.
	Container string
	// Resource is cpu, memory or ephemeral-storage.
	Resource string
	// Signal is usage or peak.
	Signal string
}

func (id SeriesID) String() string { return id.Profile + "/" + id.Token() }

// Validate checks that id can be written into keys and parsed back.
func (id SeriesID) Validate() error {
	if err := CheckProfile(id.Profile); err != nil {
		return err
	}
	if !validContainer(id.Container) {
		return fmt.Errorf("series %s: container name %q is not a DNS label", id, id.Container)
	}
	switch id.Resource {
	case ResourceCPU, ResourceMemory, ResourceEphemeralStorage:
	default:
		return fmt.Errorf("series %s: unknown resource %q", id, id.Resource)
	}
	switch id.Signal {
	case SignalUsage, SignalPeak:
	default:
		return fmt.Errorf("series %s: unknown signal %q", id, id.Signal)
	}
	return nil
}

// Token is the series' name within its profile, "<container>/<resource>/<signal>" (the
// container is empty for the pod-level series). It names the series in the profile index
// and in window and rollup keys.
func (id SeriesID) Token() string {
	return id.Container + "/" + id.Resource + "/" + id.Signal
}

// ParseToken is the inverse of Token for a series of profile.
func ParseToken(profile, token string) (SeriesID, error) {
	parts := strings.Split(token, "/")
	if len(parts) != 3 {
		return SeriesID{}, fmt.Errorf("series token %q: want <container>/<resource>/<signal>", token)
	}
	id := SeriesID{Profile: profile, Container: parts[0], Resource: parts[1], Signal: parts[2]}
	if err := id.Validate(); err != nil {
		return SeriesID{}, fmt.Errorf("series token %q: %w", token, err)
	}
	return id, nil
}

var errProfile = errors.New("profile hash must be 1-64 lowercase hex characters")

// CheckProfile validates a profile hash. Keys embed it as the hash tag, so it must not
// contain braces or separators; lowercase hex (the measurementHash alphabet) guarantees that.
func CheckProfile(profile string) error {
	if len(profile) == 0 || len(profile) > 64 {
		return fmt.Errorf("profile %q: %w", profile, errProfile)
	}
	for _, c := range []byte(profile) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("profile %q: %w", profile, errProfile)
		}
	}
	return nil
}

// validContainer accepts "" (pod level) and DNS-1123 labels.
func validContainer(s string) bool {
	if len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// Keys. Every key of a profile starts with "ballast:{<profile>}:", so the whole profile —
// each of its series, windows, rollups, index and OOM stream — hashes to one Valkey Cluster
// slot; multi-key scripts and deletes over a profile are therefore legal in cluster mode.
//
//	ballast:{h}:series             hash    token → start (unix s) of the newest window written
//	ballast:{h}:pending            set     "<token>:<start>" of every window not yet compacted
//	ballast:{h}:w:<token>:<start>  hash    one window of one series (wire fields, wire.go)
//	ballast:{h}:p:<token>:<start>  string  one rollup: closed windows compacted by the reader,
//	                                       packed (Packed.AppendBinary)
//	ballast:{h}:r:<token>:<start>  hash    a rollup as versions before packed rollups stored it
//	                                       (wire fields); read, never written, gone in a retention
//	ballast:{h}:rollups            zset    "<token>:<start>" of every rollup, scored by start
//	ballast:{h}:epoch              string  bumped by every compaction (reader cache check)
//	ballast:{h}:oom                stream  OOM kills (oom.go)
//	ballast:{h}:pressure           stream  memory-pressure readings per pod container (pressure.go)

func profilePrefix(profile string) string { return KeyPrefix + ":{" + profile + "}:" }

// IndexKey is the profile's series index.
func IndexKey(profile string) string { return profilePrefix(profile) + "series" }

// PendingKey is the set of the profile's windows that are not compacted yet.
func PendingKey(profile string) string { return profilePrefix(profile) + "pending" }

// RollupsKey is the sorted set of the profile's rollups.
func RollupsKey(profile string) string { return profilePrefix(profile) + "rollups" }

// EpochKey is the profile's compaction counter.
func EpochKey(profile string) string { return profilePrefix(profile) + "epoch" }

// BackfillKey marks a profile as backfilled from Prometheus (SET NX before the samples are
// written), so a restarted or new leader never writes that history twice.
func BackfillKey(profile string) string { return profilePrefix(profile) + "backfill" }

// OOMKey is the profile's OOM-kill stream.
func OOMKey(profile string) string { return profilePrefix(profile) + "oom" }

// PressureKey is the profile's memory-pressure stream.
func PressureKey(profile string) string { return profilePrefix(profile) + "pressure" }

// Member names one window or rollup of a series inside the pending set and the rollups
// sorted set: "<token>:<start unix seconds>".
func Member(id SeriesID, start time.Time) string {
	return id.Token() + ":" + strconv.FormatInt(start.Unix(), 10)
}

// ParseMember is the inverse of Member for a series of profile.
func ParseMember(profile, member string) (SeriesID, time.Time, error) {
	i := strings.LastIndexByte(member, ':')
	if i < 0 {
		return SeriesID{}, time.Time{}, fmt.Errorf("member %q: want <token>:<start>", member)
	}
	id, err := ParseToken(profile, member[:i])
	if err != nil {
		return SeriesID{}, time.Time{}, fmt.Errorf("member %q: %w", member, err)
	}
	start, err := strconv.ParseInt(member[i+1:], 10, 64)
	if err != nil {
		return SeriesID{}, time.Time{}, fmt.Errorf("member %q: start: %w", member, err)
	}
	return id, time.Unix(start, 0).UTC(), nil
}

// WindowKey is the hash of the window of id starting at start.
func WindowKey(id SeriesID, start time.Time) string {
	return profilePrefix(id.Profile) + "w:" + Member(id, start)
}

// RollupKey is the packed rollup of id starting at start.
func RollupKey(id SeriesID, start time.Time) string {
	return profilePrefix(id.Profile) + "p:" + Member(id, start)
}

// WindowKeyOf and RollupKeyOf build keys from a member of the profile.
func WindowKeyOf(profile, member string) string { return profilePrefix(profile) + "w:" + member }

// RollupKeyOf is RollupKey for a member of the rollups sorted set.
func RollupKeyOf(profile, member string) string { return profilePrefix(profile) + "p:" + member }

// LegacyRollupKeyOf is the hash a rollup member was stored in before rollups were packed:
// the reader still reads it, and writing the rollup deletes it.
func LegacyRollupKeyOf(profile, member string) string { return profilePrefix(profile) + "r:" + member }

// StoreEpochKey holds the store's epoch: the time (unix milliseconds) the control plane
// first used this store. It has no expiry, so a store that lost its data (flushed, or
// restarted without persistence) is recognised by the key missing or being newer than the
// history a WorkloadProfile's status shows. It is the one key outside every profile's slot.
const StoreEpochKey = KeyPrefix + ":store-epoch"

// PurgePatterns lists glob patterns (SCAN MATCH syntax) that together cover every key of a
// profile. Purging deletes the keys it can enumerate from the profile's own index keys; the
// patterns let tests and operators verify nothing is left.
func PurgePatterns(profile string) []string {
	p := profilePrefix(profile)
	return []string{
		IndexKey(profile), PendingKey(profile), RollupsKey(profile), EpochKey(profile), OOMKey(profile), PressureKey(profile),
		BackfillKey(profile), p + "w:*", p + "p:*", p + "r:*",
	}
}

// ProfilePattern matches every key of a profile.
func ProfilePattern(profile string) string { return profilePrefix(profile) + "*" }
