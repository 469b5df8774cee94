package cgroup

import "testing"

// BenchmarkReadSample reads one container's files as ReadSample does (every path resolved
// through the root, each file read with os.Root.ReadFile) and as the Collector does
// (through the container's open directories, into one reused buffer).
func BenchmarkReadSample(b *testing.B) {
	r := openReader(b, "testdata/cgroupfs-v2", Options{})
	loc, err := r.LocateContainer(uidB, Burstable, "containerd://"+idB)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("by-path", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.ReadSample(loc, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open-dirs", func(b *testing.B) {
		dirs, err := r.openDirs(loc, new([]byte))
		if err != nil {
			b.Fatal(err)
		}
		defer dirs.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.readSample(dirs, loc, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseMemoryStat parses a real kernel's memory.stat (60 keys) into the map of
// every key, and for inactive_file only (what a sampling cycle needs).
func BenchmarkParseMemoryStat(b *testing.B) {
	data := fixture(b, "1", s1Pod+"/memory.stat")
	b.Run("all-keys", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseMemoryStat(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("inactive-file", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseMemoryStatInactiveFile(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
