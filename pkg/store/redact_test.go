package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// hostilePasswords hold every character reserved in URLs, alone and together, raw as
// people paste them into a URL.
var hostilePasswords = []string{
	"pa/ss", "p@ss@word", "pa:ss", "pa?ss", "pa#ss", "pa%ss", "pa%2Fss", "pa&ss=1", "pa;ss", "pa[ss]",
	"pa ss", "pa+ss", "pa$s!s*'(),", "/6379/0", "@host:1", "s3cr/t@x:y?z#w%v&u=t;s[r]q+p",
}

// leaks reports whether text shows password p or a telling piece of it.
func leaks(text, p string) bool {
	if strings.Contains(text, p) {
		return true
	}
	if e := url.QueryEscape(p); strings.Contains(text, e) {
		return true
	}
	for _, piece := range strings.FieldsFunc(p, func(r rune) bool { return strings.ContainsRune(":/?#@&=;[]", r) }) {
		if len(piece) >= minPiece && strings.Contains(text, piece) && !strings.Contains("redis://xxxxx@cache.example:6379", piece) {
			return true
		}
	}
	return false
}

func TestRedactURLHostilePasswords(t *testing.T) {
	for _, p := range hostilePasswords {
		for _, raw := range []string{
			"redis://user:" + p + "@cache.example:6379",
			"rediss://:" + p + "@cache.example:6379/0",
			"redis://default:" + url.QueryEscape(p) + "@cache.example:6379?addr=10.0.0.2:6379",
		} {
			got := RedactURL(raw)
			if leaks(got, p) {
				t.Errorf("RedactURL(%q) = %q shows the password", raw, got)
			}
			if !strings.Contains(got, "cache.example:6379") {
				t.Errorf("RedactURL(%q) = %q lost the host", raw, got)
			}
			_, err := Options(raw)
			if err != nil && leaks(err.Error(), p) {
				t.Errorf("Options(%q) error %q shows the password", raw, err)
			}
			// An error quoting the whole URL, as url.Parse's does, is cleaned by the Redactor.
			_, perr := url.Parse(raw)
			if perr == nil {
				perr = fmt.Errorf("dial %s: refused", raw)
			}
			red := RedactError(perr, raw)
			if leaks(red.Error(), p) {
				t.Errorf("RedactError(%q) = %q shows the password", perr, red)
			}
			if !errors.Is(red, perr) {
				t.Errorf("RedactError lost the original error")
			}
		}
	}
}

func TestRedactURLWithoutCredentials(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://cache:6379":                  "redis://cache:6379",
		"rediss://cache:6380?addr=other:6380": "rediss://cache:6380?addr=other:6380",
		"redis://u:p@cache:6379":              "redis://xxxxx@cache:6379",
		"cache:6379":                          "cache:6379",
		"u:pw@cache:6379":                     "xxxxx@cache:6379",
		"redis://user:a@b@cache:6379/0?db=1":  "redis://xxxxx@cache:6379/0?db=1",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestRedactorExtraSecrets(t *testing.T) {
	r := NewRedactor("redis://cache:6379", "file/pass@word")
	msg := r.Error(errors.New(`AUTH "file/pass@word" failed; escaped file%2Fpass%40word`)).Error()
	if strings.Contains(msg, "file/pass") || strings.Contains(msg, "file%2Fpass") {
		t.Fatalf("extra secret shown: %s", msg)
	}
	if r.Error(nil) != nil {
		t.Fatal("nil error must stay nil")
	}
	plain := errors.New("connection refused")
	if r.Error(plain) != plain {
		t.Fatal("an error without secrets must be returned as it is")
	}
}

// FuzzRedactURL: no password, whatever its characters, survives RedactURL or an Options error.
func FuzzRedactURL(f *testing.F) {
	for _, p := range hostilePasswords {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) < minPiece || strings.ContainsAny(p, "\r\n") {
			return
		}
		raw := "redis://user:" + p + "@cache.example:6379"
		if strings.Contains("redis://xxxxx@cache.example:6379", p) {
			return
		}
		if got := RedactURL(raw); strings.Contains(got, p) {
			t.Fatalf("RedactURL(%q) = %q", raw, got)
		}
		// The reworded parse error names the reserved characters itself.
		const hint = "percent-encode reserved characters such as / @ : ? # % in the password, or better give it with --store-password-file"
		if _, err := Options(raw); err != nil && strings.Contains(err.Error(), p) && !strings.Contains(hint, p) {
			t.Fatalf("Options(%q): %v", raw, err)
		}
	})
}
