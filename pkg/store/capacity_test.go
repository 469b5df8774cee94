package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/valkey-io/valkey-go"
)

func TestParseInfoMemory(t *testing.T) {
	info := "# Memory\r\nused_memory:3145900\r\nused_memory_human:3.00M\r\nmaxmemory:3145728\r\n" +
		"maxmemory_policy:noeviction\r\nmem_not_counted_for_evict:200\r\n"
	cp, err := ParseInfoMemory(info)
	if err != nil {
		t.Fatal(err)
	}
	want := Capacity{UsedBytes: 3145900, CountedBytes: 3145700, MaxBytes: 3145728, Policy: "noeviction"}
	if cp != want {
		t.Errorf("got %+v, want %+v", cp, want)
	}
	if r := cp.Ratio(); r < 0.99 || r > 1 {
		t.Errorf("ratio %v", r)
	}
	for name, bad := range map[string]string{
		"no maxmemory":   "used_memory:10\r\n",
		"not a number":   "used_memory:ten\r\nmaxmemory:0\r\n",
		"no used_memory": "maxmemory:0\r\n",
	} {
		if _, err := ParseInfoMemory(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if cp, err := ParseInfoMemory("used_memory:10\nmaxmemory:0\n"); err != nil || cp.Ratio() != 0 {
		t.Errorf("unlimited store: %+v %v", cp, err)
	}
}

func TestIsStoreFull(t *testing.T) {
	oom := fmt.Errorf("flushing windows: 3 failed, first: %w", errors.New("refused: OOM command not allowed when used memory > 'maxmemory'."))
	if !IsStoreFull(oom) || !IsStoreFull(&FlushError{Failed: []int{0}, Err: oom}) {
		t.Error("a refused window is not recognised")
	}
	for _, err := range []error{nil, errors.New("dial tcp: connection refused"), valkey.Nil} {
		if IsStoreFull(err) {
			t.Errorf("%v taken for a full store", err)
		}
	}
}
