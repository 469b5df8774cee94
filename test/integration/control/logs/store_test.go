package logs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// secret is a store password with every character reserved in URLs; a URL holding it raw
// does not parse, and url.Parse's error would quote the whole URL.
const secret = "s3cr/t@p:a?ss#w%rd&x=y;z"

// secretPieces are the parts of secret a careless redaction could still show.
var secretPieces = []string{secret, "s3cr/t", "t@p:a", "ss#w", "w%rd", "s3cr", "%2Ft"}

func leaked(text string) string {
	for _, p := range secretPieces {
		if strings.Contains(text, p) {
			return p
		}
	}
	return ""
}

// enrolledPod creates a measure-mode pod whose profile the control plane then computes from
// the store (so every store problem is logged on the profile reconcile).
func enrolledPod(t *testing.T, app string) {
	t.Helper()
	mustCreate(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: app + "-0", Namespace: "team",
		Labels: map[string]string{"app": app, ballastv1.ModeLabel: ballastv1.ModeMeasure}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}}}})
}

// TestStoreSecretsNeverLogged runs the real binary with a store URL whose password holds
// '/', '@', ':', '?', '#', '%': the profile reconcile logs the store error on every try, and
// neither the log, nor any event, nor any WorkloadProfile shows the password.
func TestStoreSecretsNeverLogged(t *testing.T) {
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster(t, port)
	p := startControl(t, port, "--redis-url", "redis://default:"+secret+"@"+srv.Valkey.Addr)
	enrolledPod(t, "leaky")
	line := p.waitLines(t, "the store error on a profile reconcile", 1, msg("computing profile statistics"))[0]
	if e, _ := line["error"].(string); !strings.Contains(e, "cannot be parsed") || !strings.Contains(e, "xxxxx@"+srv.Valkey.Addr) {
		t.Errorf("the error should say the URL cannot be parsed and name it redacted: %q", e)
	}
	if piece := leaked(p.logs.String()); piece != "" {
		t.Fatalf("the log shows %q of the store password", piece)
	}
	ctx := context.Background()
	evs := &corev1.EventList{}
	if err := srv.Kube.Client.List(ctx, evs); err != nil {
		t.Fatal(err)
	}
	wps := &ballastv1.WorkloadProfileList{}
	if err := srv.Kube.Client.List(ctx, wps); err != nil {
		t.Fatal(err)
	}
	for _, o := range []any{evs, wps} {
		b, _ := json.Marshal(o)
		if piece := leaked(string(b)); piece != "" {
			t.Errorf("%T shows %q of the store password", o, piece)
		}
	}
}

// TestStorePasswordFile: against a Valkey with requirepass, the binary connects with
// --store-password-file (it writes the store epoch on its first read); with a wrong password
// it logs a clear error and keeps serving.
func TestStorePasswordFile(t *testing.T) {
	v, err := harness.StartValkeyAuth(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	write := func(content string) string {
		f := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(f, []byte(content), 0o400); err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("wrong password", func(t *testing.T) {
		port, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cluster(t, port)
		p := startControl(t, port, "--redis-url", "redis://"+v.Addr, "--store-password-file", write("not-it"))
		enrolledPod(t, "locked-out")
		line := p.waitLines(t, "the refused credentials logged", 1, msg("computing profile statistics"))[0]
		if e, _ := line["error"].(string); !strings.Contains(e, "refused the credentials") {
			t.Errorf("error %q does not say the credentials were refused", e)
		}
		select {
		case <-p.done:
			t.Fatal("ballast-control exited on a wrong store password")
		default:
		}
		if piece := leaked(p.logs.String()); piece != "" {
			t.Errorf("the log shows %q of the store password", piece)
		}
	})
	t.Run("password file", func(t *testing.T) {
		port, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cluster(t, port)
		p := startControl(t, port, "--redis-url", "redis://"+v.Addr, "--store-password-file", write(secret+"\n"))
		enrolledPod(t, "locked-in")
		harness.Eventually(t, 30*time.Second, "ballast-control read the locked store (store epoch written)", func() error {
			if got, err := v.Do("GET", series.StoreEpochKey); err != nil || got == "" {
				return fmt.Errorf("store epoch %q: %v", got, err)
			}
			return nil
		})
		if got := p.logs.lines(msg("computing profile statistics")); len(got) > 0 {
			t.Errorf("store errors with the right password: %v", got)
		}
		if piece := leaked(p.logs.String()); piece != "" {
			t.Errorf("the log shows %q of the store password", piece)
		}
	})
}
