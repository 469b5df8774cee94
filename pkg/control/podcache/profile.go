package podcache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Profile is the cache TransformFunc of WorkloadProfiles (cache.ByObject.Transform):
// managedFields dropped, equal label maps shared (stringMaps), and the strings that
// profiles repeat interned: label keys and values, finalizers, the policy reference,
// state, container and resource names, sources, time spans, recommendation keys,
// condition types, statuses, reasons and messages (one policy's messages are the same on
// all its profiles). A profile's own figures
// (quantities, bases, summary) stay its own. Other objects pass unchanged. It edits the
// object in place (the informer's freshly decoded copy) and is idempotent; nothing is
// changed but where the bytes live.
func Profile(obj any) (any, error) {
	wp, ok := obj.(*ballastv1.WorkloadProfile)
	if !ok {
		return obj, nil
	}
	wp.ManagedFields = nil
	wp.Labels, wp.Annotations = stringMaps.share(wp.Labels), stringMaps.share(wp.Annotations)
	for i, f := range wp.Finalizers {
		wp.Finalizers[i] = intern(f)
	}
	st := &wp.Status
	// Usually equal to each other, and to other profiles' selector labels.
	st.TupleLabels, st.SelectorLabels = stringMaps.share(st.TupleLabels), stringMaps.share(st.SelectorLabels)
	if r := st.PolicyRef; r != nil {
		r.Kind, r.Namespace, r.Name = intern(r.Kind), intern(r.Namespace), intern(r.Name)
	}
	st.State = intern(st.State)
	for i := range st.Containers {
		c := &st.Containers[i]
		c.Name = intern(c.Name)
		internStats(c.UsageStats)
		for j := range c.Readiness {
			r := &c.Readiness[j]
			r.Resource, r.Samples, r.TimeSpan = intern(r.Resource), intern(r.Samples), intern(r.TimeSpan)
		}
		if c.Recommendations != nil {
			recs := make(map[string]ballastv1.Recommendation, len(c.Recommendations))
			for k, v := range c.Recommendations {
				recs[intern(k)] = v
			}
			c.Recommendations = recs
		}
	}
	internStats(st.PodUsageStats)
	if f := st.Fallback; f != nil {
		f.Share = intern(f.Share)
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
	return wp, nil
}

func internStats(us []ballastv1.UsageStats) {
	for i := range us {
		u := &us[i]
		u.Resource, u.Source, u.TimeSpan = intern(u.Resource), intern(u.Source), intern(u.TimeSpan)
	}
}
