package nodeagent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
)

// A pod files samples only under the profile its own labels and namespace lead to: a
// profile-ref naming another workload's profile, or a ResourcePolicy's profile from another
// namespace, is ignored (counted, logged once) and nothing reaches the victim's series in
// the real Valkey; the honest pod beside them is filed as usual.
func TestForeignProfileRefIsIgnored(t *testing.T) {
	ensureCluster(t)
	ctx := context.Background()
	ns, other, node := createNamespace(t), createNamespace(t), newName("node")
	s := newSim(t)
	good, goodHash := newName("good"), newHash()
	victim, victimHash := newName("victim"), newHash()
	createProfile(t, good, goodHash)
	createProfile(t, victim, victimHash)

	// The team's ResourcePolicy in ns and the profile it gives pods labelled team.
	team := newName("team")
	teamLabel, teamHash := newName("team"), newHash()
	mustCreateObj(t, &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: team},
		Spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{{Resource: "memory", Field: "request", Source: "fast", Aggregation: "max"}}}})
	ids := []string{identityLabel}
	tuple, sel := identity.Tuple(ids, map[string]string{identityLabel: teamLabel})
	teamProfile := identity.ProfileName(ids, tuple, sel, identity.Discriminator(ballastv1.KindResourcePolicy, ns, team))
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: teamProfile}}
	mustCreateObj(t, wp)
	wp.Status.MeasurementHash, wp.Status.State = teamHash, ballastv1.StateAccruing
	if err := srv.Kube.Client.Status().Update(ctx, wp); err != nil {
		t.Fatal(err)
	}

	honest := &podSpec{ns: ns, name: "honest-1", node: node, profile: good, policy: "fast", containers: []string{"app"}}
	// Its own labels are "intruder": it claims the victim's profile (kill switch on, anyone
	// may write the annotation).
	thief := &podSpec{ns: ns, name: "thief-1", node: node, profile: victim, label: newName("intruder"), policy: "fast", containers: []string{"app"}}
	// Same labels as the team's pods, but from another namespace, which the team's
	// ResourcePolicy does not cover.
	outsider := &podSpec{ns: other, name: "outsider-1", node: node, label: teamLabel, policy: "fast", containers: []string{"app"}}
	for _, ps := range []*podSpec{honest, thief, outsider} {
		ps.create(t)
		s.addPod(t, ps, 0, map[string]simCtr{"app": {milli: 100, v: memValues(40*mi, 0)}})
	}
	outsider.annotate(t, ballastv1.ProfileRefAnnotation, teamProfile)

	a := startAgent(t, node, s.tree.Root, "--debug-auth=false")
	r := storeReader(t)
	eventually(t, 45*time.Second, "the honest pod filed and both claims ignored", func() error {
		hs, err := read(r, goodHash)
		if err != nil {
			return err
		}
		if h := hs["app/memory/usage"]; h == nil || h.N < 3 {
			return fmt.Errorf("honest pod's samples not written yet: %v", hs)
		}
		rep, err := a.report()
		if err != nil {
			return err
		}
		for _, p := range []*podSpec{thief, outsider} {
			pr := findPod(rep, p.ns, p.name)
			if pr == nil || !pr.ProfileRefIgnored || pr.Hash != "" {
				return fmt.Errorf("%s: %+v, want its profile-ref ignored", p.name, pr)
			}
			if recorded(rep, "", p.uid, "app", "memory", "usage") < 3 {
				return fmt.Errorf("%s: samples not held pending yet", p.name)
			}
		}
		return nil
	})
	for name, hash := range map[string]string{"victim": victimHash, "team": teamHash} {
		hs, err := read(r, hash)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) != 0 {
			t.Errorf("the %s profile received samples it must not: %v", name, hs)
		}
	}
	if n, err := a.metric("ballast_node_profile_refs_ignored_total", ""); err != nil || n != 2 {
		t.Errorf("ballast_node_profile_refs_ignored_total = %v (err %v), want 2 (once per pod)", n, err)
	}
	log, _ := os.ReadFile(a.logPath)
	if n := strings.Count(string(log), "ignoring a profile-ref"); n != 2 {
		t.Errorf("logged %d times, want once per pod (2)", n)
	}
}
