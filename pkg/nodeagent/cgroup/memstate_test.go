package cgroup

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ReadMemoryState reads the lifetime peak and the limit of both hierarchy versions through
// the root, and reports what is missing without inventing it.
func TestReadMemoryState(t *testing.T) {
	cases := map[string]struct {
		root string
		want MemoryState
	}{
		"v2, no limit":   {root: "testdata/cgroupfs-v2", want: MemoryState{HasPeak: true, PeakBytes: 60000000, HasLimit: true, LimitBytes: Unlimited}},
		"v1, 64Mi limit": {root: "testdata/cgroupv1-cgroupfs", want: MemoryState{HasPeak: true, PeakBytes: 50331648, HasLimit: true, LimitBytes: 67108864}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := openReader(t, tc.root, Options{})
			loc, err := r.LocateContainer(uidB, Burstable, "containerd://"+idB)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.ReadMemoryState(loc)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
	r := openReader(t, "testdata/cgroupfs-v2", Options{})
	got, err := r.ReadMemoryState(Location{Version: V2, CPUDir: "kubepods/gone", MemoryDir: "kubepods/gone"})
	if !errors.Is(err, fs.ErrNotExist) || got != (MemoryState{}) {
		t.Errorf("vanished cgroup: %+v, %v", got, err)
	}
	if _, err := r.ReadMemoryState(Location{Version: V2, MemoryDir: "../../etc"}); err == nil {
		t.Error("a directory outside the root was read")
	}
}
