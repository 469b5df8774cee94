package nodeagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/test/harness"
)

// storeSecret holds every character reserved in URLs.
const storeSecret = "s3cr/t@p:a?ss#w%rd&x=y;z"

func showsSecret(text string) string {
	for _, p := range []string{storeSecret, "s3cr/t", "t@p:a", "ss#w", "w%rd", "s3cr"} {
		if strings.Contains(text, p) {
			return p
		}
	}
	return ""
}

// TestStoreCredentials runs the real agent against a Valkey with requirepass: with a URL
// whose raw password does not parse, neither its log nor its debug report shows the password;
// with a wrong password file it reports the refusal and keeps running; with the right file
// it flushes.
func TestStoreCredentials(t *testing.T) {
	ensureCluster(t)
	v, err := harness.StartValkeyAuth(storeSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	file := func(content string) string {
		f := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(f, []byte(content), 0o400); err != nil {
			t.Fatal(err)
		}
		return f
	}
	sampled := func(t *testing.T) (node string, s *sim) {
		ns, node := createNamespace(t), newName("node")
		prof, hash := newName("locked"), newHash()
		createProfile(t, prof, hash)
		s = newSim(t)
		pod := &podSpec{ns: ns, name: "app-1", node: node, profile: prof, policy: "fast", containers: []string{"app"}}
		pod.create(t)
		s.addPod(t, pod, 0, map[string]simCtr{"app": {milli: 100, v: memValues(50*mi, 0)}})
		return node, s
	}

	t.Run("unparseable URL", func(t *testing.T) {
		node, s := sampled(t)
		a := startAgent(t, node, s.tree.Root, "--debug-auth=false", "--redis-url", "redis://default:"+storeSecret+"@"+v.Addr)
		eventually(t, 30*time.Second, "a failed flush reported", func() error {
			r, err := a.report()
			if err != nil {
				return err
			}
			if r.Store.LastError == "" {
				return fmt.Errorf("no store error yet")
			}
			b, _ := json.Marshal(r)
			if piece := showsSecret(string(b)); piece != "" {
				t.Fatalf("the debug report shows %q of the password: %s", piece, b)
			}
			if want := "redis://xxxxx@" + v.Addr; r.Store.URL != want {
				t.Errorf("debug report URL %q, want %q", r.Store.URL, want)
			}
			return nil
		})
		b, _ := os.ReadFile(a.logPath)
		if !strings.Contains(string(b), "store unavailable") {
			t.Errorf("the agent did not log the store problem:\n%s", tail(string(b), 30))
		}
		if piece := showsSecret(string(b)); piece != "" {
			t.Errorf("the agent log shows %q of the password", piece)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		node, s := sampled(t)
		a := startAgent(t, node, s.tree.Root, "--debug-auth=false", "--redis-url", "redis://"+v.Addr,
			"--store-password-file", file("not-it"))
		eventually(t, 30*time.Second, "the refusal reported", func() error {
			r, err := a.report()
			if err != nil {
				return err
			}
			if !strings.Contains(r.Store.LastError, "refused the credentials") {
				return fmt.Errorf("store error %q", r.Store.LastError)
			}
			return nil
		})
		if a.exited() {
			t.Fatal("the agent exited on a wrong store password")
		}
	})
	t.Run("password file", func(t *testing.T) {
		node, s := sampled(t)
		a := startAgent(t, node, s.tree.Root, "--debug-auth=false", "--redis-url", "redis://"+v.Addr,
			"--store-password-file", file(storeSecret+"\n"))
		eventually(t, 30*time.Second, "windows flushed to the locked store", func() error {
			r, err := a.report()
			if err != nil {
				return err
			}
			if !r.Store.Connected || r.Store.FlushedWindows == 0 {
				return fmt.Errorf("connected %v, flushed %d, error %q", r.Store.Connected, r.Store.FlushedWindows, r.Store.LastError)
			}
			return nil
		})
	})
}
