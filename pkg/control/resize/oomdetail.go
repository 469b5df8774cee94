package resize

import "github.com/ballastk8s/ballast/pkg/series"

// oomDetail is the victim part of an OOM raise's event message, "" when the agent had no
// eBPF record of the kill: "victim pid 4242 (stress), rss 262144000 bytes, container limit hit; ".
func oomDetail(ev series.OOMEvent) string {
	v := ev.Victim()
	if v == "" {
		return ""
	}
	v = "victim " + v
	if ev.Kind != "" && ev.Kind != "unknown" {
		v += ", " + ev.Kind + " limit hit"
	}
	return v + "; "
}
