package sandbox

import (
	"os"
	"testing"
)

func TestP95(t *testing.T) {
	xs := make([]float64, 0, 101)
	for i := 100; i >= 0; i-- {
		xs = append(xs, float64(i))
	}
	if got := P95(xs); got != 95 {
		t.Errorf("P95(0..100) = %v, want 95", got)
	}
	if xs[0] != 100 {
		t.Error("P95 reordered its input")
	}
	if P95(nil) != 0 {
		t.Error("P95 of nothing")
	}
}

func TestReadProcStatOfThisProcess(t *testing.T) {
	st, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.RSSMiB <= 0 || st.PeakMiB < st.RSSMiB || st.CPUSeconds < 0 {
		t.Errorf("implausible %+v", st)
	}
	if _, err := ReadProcStat(-1); err == nil {
		t.Error("no error for a process that cannot exist")
	}
}
