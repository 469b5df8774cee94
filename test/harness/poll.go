package harness

import (
	"testing"
	"time"
)

// Eventually polls f every 50 ms until it returns nil, and fails the test with what and
// f's last error once within has passed. It is how tests wait: never a bare sleep.
func Eventually(t testing.TB, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
