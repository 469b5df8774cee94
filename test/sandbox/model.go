package sandbox

import (
	"math"
	"math/rand/v2"
)

// ModelLabel picks a pod's workload model.
const ModelLabel = "sandbox.ballast/model"

// Models of the sandbox's apps. Values are what the container really uses: cpu in
// millicores, memory working set in bytes, ephemeral storage in bytes.
const (
	ModelSteady  = "steady"  // flat with a little noise
	ModelDiurnal = "diurnal" // a compressed day: a sine over Period seconds
	ModelSpiky   = "spiky"   // low base, short bursts
	ModelLeak    = "leak"    // memory grows slowly, never freed
	ModelOOM     = "oom"     // memory climbs to the limit, is OOM-killed, restarts
)

const mi = 1 << 20

// usage is one instant of a container's use.
type usage struct {
	MilliCPU    float64
	MemoryBytes float64
	DiskBytes   float64
}

// model returns a container's usage t seconds after it started; limit is its memory limit
// (0 = none), oom reports that the container must be OOM-killed now.
type model func(t float64, r *rand.Rand, limit float64) (u usage, oom bool)

var models = map[string]model{
	ModelSteady: func(t float64, r *rand.Rand, _ float64) (usage, bool) {
		return usage{MilliCPU: 180 + r.NormFloat64()*6, MemoryBytes: 160*mi + r.NormFloat64()*2*mi, DiskBytes: 40 * mi}, false
	},
	ModelDiurnal: func(t float64, r *rand.Rand, _ float64) (usage, bool) {
		phase := math.Sin(2 * math.Pi * t / 120)
		return usage{MilliCPU: 120 + 80*phase + r.NormFloat64()*5, MemoryBytes: 220*mi + 40*mi*phase, DiskBytes: 60 * mi}, false
	},
	ModelSpiky: func(t float64, r *rand.Rand, _ float64) (usage, bool) {
		cpu := 40 + r.NormFloat64()*3
		if r.Float64() < 0.05 {
			cpu = 500 + r.Float64()*200
		}
		return usage{MilliCPU: cpu, MemoryBytes: 300*mi + r.NormFloat64()*3*mi, DiskBytes: 20 * mi}, false
	},
	ModelLeak: func(t float64, r *rand.Rand, _ float64) (usage, bool) {
		return usage{MilliCPU: 60 + r.NormFloat64()*3, MemoryBytes: 100*mi + t*256*1024, DiskBytes: 10*mi + t*1024}, false
	},
	ModelOOM: func(t float64, r *rand.Rand, limit float64) (usage, bool) {
		mem := 150*mi + math.Mod(t, 90)*2*mi // climbs 2Mi/s, restarts every 90 s
		if limit > 0 && mem >= limit {
			return usage{MilliCPU: 90, MemoryBytes: limit}, true
		}
		return usage{MilliCPU: 90 + r.NormFloat64()*4, MemoryBytes: mem, DiskBytes: 5 * mi}, false
	},
}

func modelFor(name string) model {
	if m, ok := models[name]; ok {
		return m
	}
	return models[ModelSteady]
}

func clampPositive(v float64) float64 { return math.Max(v, 0) }
