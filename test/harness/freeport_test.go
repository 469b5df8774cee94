package harness

import "testing"

// TestFreePortNeverRepeats: ports handed out once are not handed out again in the process,
// even when the kernel offers them again.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
