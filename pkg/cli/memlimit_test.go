package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	cases := map[string]struct {
		env, gomemlimit string
		program         int64
		want            int64
		wantErr         bool
	}{
		"unset":                         {want: 0},
		"128Mi limit":                   {env: "134217728", want: 120795956},
		"512Mi, ballast-control":        {env: "536870912", program: ControlProgramPages, want: 432852173},
		"128Mi, ballast-control":        {env: "134217728", program: ControlProgramPages, want: 70464308},
		"program larger than the limit": {env: "134217728", program: 1 << 30, want: 67108864},
		"GOMEMLIMIT wins":               {env: "134217728", gomemlimit: "64MiB", want: 0},
		"not a number":                  {env: "128Mi", wantErr: true},
		"zero":                          {env: "0", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv(MemoryLimitEnv, tc.env)
			if tc.gomemlimit != "" {
				t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			}
			got, err := SetMemoryLimit(tc.program)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("SetMemoryLimit() = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
			wantRuntime := int64(math.MaxInt64)
			if tc.want > 0 {
				wantRuntime = tc.want
			}
			if rt := debug.SetMemoryLimit(-1); rt != wantRuntime {
				t.Errorf("runtime limit %d, want %d", rt, wantRuntime)
			}
		})
	}
}
