package debug

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Path is where the endpoint is served; Auth authorizes callers for it (and below it).
const Path = "/debug/ballast"

// Provider builds a report at request time.
type Provider func(Filter) Report

// Handler serves Provider's report as JSON (default) or text: ?format=text|json wins, else
// an Accept header preferring text/plain selects text.
func Handler(p Provider) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rep := p(Filter{Pod: r.URL.Query().Get("pod")})
		w.Header().Set("Cache-Control", "no-store")
		if wantsText(r) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_ = WriteText(w, rep, "")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	})
}

func wantsText(r *http.Request) bool {
	switch strings.ToLower(r.URL.Query().Get("format")) {
	case "text", "txt", "plain":
		return true
	case "json":
		return false
	}
	// The first media type of Accept that we can serve decides.
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt := strings.TrimSpace(strings.SplitN(part, ";", 2)[0])
		switch mt {
		case "text/plain":
			return true
		case "application/json", "*/*", "application/*":
			return false
		}
	}
	return false
}
