package sizing

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/sizing/memfloor"
)

// BenchmarkAdmissionRuntime is the calculator's admission cost for a three-container pod
// with JVM options, under a generic and a jvm policy, and with pod-level resources sized:
// what the runtime floors and pod-level sizing add to the webhook's work.
func BenchmarkAdmissionRuntime(b *testing.B) {
	p := pod(
		container("app").env("JAVA_TOOL_OPTIONS", "-XX:+UseG1GC -Xss512k -Xmx512m -XX:MaxMetaspaceSize=128m").req("cpu", "1", "memory", "1Gi").lim("memory", "1Gi"),
		container("side").env("GOMEMLIMIT", "100MiB").req("cpu", "100m", "memory", "128Mi").lim("memory", "256Mi"),
		container("proxy").req("cpu", "100m", "memory", "64Mi").lim("memory", "128Mi"),
	).podLevel(corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "2Gi"), Limits: rl("memory", "3Gi")}).obj()
	recs := Recommendations{
		"app":   {"cpu": rec("cpu", "300m", ""), "memory": rec("memory", "300Mi", "400Mi")},
		"side":  {"cpu": rec("cpu", "50m", ""), "memory": rec("memory", "64Mi", "90Mi")},
		"proxy": {"cpu": rec("cpu", "20m", ""), "memory": rec("memory", "32Mi", "48Mi")},
	}
	for name, params := range map[string]Params{
		"generic":       {Managed: defaultManaged()},
		"jvm":           {Managed: defaultManaged(), Runtime: RuntimeParams{Type: memfloor.JVM}},
		"auto+podLevel": {Managed: defaultManaged(), Runtime: RuntimeParams{Type: memfloor.Auto}, PodLevel: PodLevelSize},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := Admission(p, recs, params); len(res.Changes) == 0 {
					b.Fatal("nothing sized")
				}
			}
		})
	}
}
