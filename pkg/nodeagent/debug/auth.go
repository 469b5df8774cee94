package debug

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
)

// Audience is the prefix of the only audiences the debug endpoint accepts: the agent on
// node N serves tokens minted for NodeAudience(N) and nothing else. A token minted for it
// (a TokenRequest with that audience) is refused by the API server for every other use (its
// audience is not the API server's) and by every other agent (another node's audience).
// kubectl ballast node mints one per call; an ordinary API token is refused.
const Audience = "ballast-node-debug"

// NodeAudience is the audience of debug tokens for the agent on node.
func NodeAudience(node string) string { return Audience + "/" + node }

// ServiceAccountUser is the user name the API server gives a service account's tokens.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// User is an authenticated caller.
type User struct {
	Name      string
	UID       string
	Groups    []string
	Extra     map[string][]string
	Audiences []string
}

// Reviewer asks the API server who a token belongs to.
type Reviewer interface {
	// ReviewToken returns the token's user when the token is valid for audience; ok is
	// false otherwise (an ordinary API token included).
	ReviewToken(ctx context.Context, token, audience string) (u User, ok bool, err error)
}

// KubeReviewer is a Reviewer backed by TokenReview, a review request the API server answers
// without storing anything.
type KubeReviewer struct {
	authn authnclient.AuthenticationV1Interface
}

// NewKubeReviewer returns a reviewer calling the API server of cfg.
func NewKubeReviewer(cfg *rest.Config) (*KubeReviewer, error) {
	authn, err := authnclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &KubeReviewer{authn: authn}, nil
}

// ReviewToken implements Reviewer with a TokenReview for audience only.
func (k *KubeReviewer) ReviewToken(ctx context.Context, token, audience string) (User, bool, error) {
	tr, err := k.authn.TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{
		Token: token, Audiences: []string{audience}}}, metav1.CreateOptions{})
	if err != nil {
		return User{}, false, fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated {
		return User{}, false, nil
	}
	u := User{Name: tr.Status.User.Username, UID: tr.Status.User.UID, Groups: tr.Status.User.Groups, Audiences: tr.Status.Audiences}
	if len(tr.Status.User.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range tr.Status.User.Extra {
			u.Extra[k] = v
		}
	}
	return u, true, nil
}

// Accept is the one identity the endpoint serves: tokens of one service account, for the
// audience of one node (the agent's own). Who may view the endpoint is therefore who may
// create serviceaccounts/token for that service account, which the API server's RBAC
// decides (and its audit log records).
type Accept struct {
	Namespace, ServiceAccount string
	Node                      string
}

// audience is the one audience the endpoint asks the TokenReview for.
func (a Accept) audience() string { return NodeAudience(a.Node) }

// refusal reports why u is not the accepted identity ("" when it is).
func (a Accept) refusal(u User) string {
	if u.Name != ServiceAccountUser(a.Namespace, a.ServiceAccount) {
		return fmt.Sprintf("the token belongs to %q, not to the debug service account %s/%s", u.Name, a.Namespace, a.ServiceAccount)
	}
	if !slices.Contains(u.Audiences, a.audience()) {
		return fmt.Sprintf("the token is not valid for the audience %q", a.audience())
	}
	return ""
}

// Cache lifetime of a token review, as the kubelet's webhook authenticator uses it.
const (
	tokenTTL   = time.Minute
	maxEntries = 4096
)

// Auth authenticates requests before they reach the wrapped handler:
//   - no bearer token (Authorization, else ProxyAuthHeader), or one the API server does
//     not accept for this node's audience (an ordinary API token, or another node's debug
//     token, included): 401;
//   - a valid token of another service account than Accept's: 403;
//   - the API server cannot be asked: 503 (never served unauthenticated).
//
// Reviews are cached for a minute keyed by a token digest.
type Auth struct {
	r      Reviewer
	accept Accept
	now    func() time.Time

	mu     sync.Mutex
	tokens map[string]cachedUser
}

type cachedUser struct {
	u       User
	ok      bool
	expires time.Time
}

// NewAuth returns an Auth asking r and serving accept only.
func NewAuth(r Reviewer, accept Accept) *Auth {
	return &Auth{r: r, accept: accept, now: time.Now, tokens: map[string]cachedUser{}}
}

// howTo ends every 401: it tells callers, those of an older plugin (which sent their own
// API token) included, which token to send instead.
func (a *Auth) howTo() string {
	return fmt.Sprintf("The debug endpoint takes only a short-lived token minted for it "+
		"(service account %s/%s, audience %s), never your own API token: "+
		"upgrade kubectl-ballast (older versions sent your own token), or mint one with "+
		"kubectl -n %s create token %s --audience %s --duration 10m",
		a.accept.Namespace, a.accept.ServiceAccount, a.accept.audience(), a.accept.Namespace, a.accept.ServiceAccount, a.accept.audience())
}

// Wrap protects next.
func (a *Auth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ballast-node"`)
			http.Error(w, "Unauthorized: a bearer token is required. "+a.howTo(), http.StatusUnauthorized)
			return
		}
		u, ok, err := a.user(r.Context(), token)
		if err != nil {
			http.Error(w, "authentication unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ballast-node", error="invalid_token"`)
			http.Error(w, "Unauthorized: the token was not accepted. "+a.howTo(), http.StatusUnauthorized)
			return
		}
		if why := a.accept.refusal(u); why != "" {
			http.Error(w, "Forbidden: "+why, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ProxyAuthHeader carries the debug token ("Bearer <token>", minted for Audience) through
// the API server's pods/proxy, which removes the Authorization header of the request it
// proxies once it has authenticated it (that header holds the caller's own credentials,
// which never reach the agent). kubectl ballast node sets it; the agent reads it when
// Authorization is absent, and checks the token exactly like one in Authorization.
const ProxyAuthHeader = "Ballast-Authorization"

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		h = r.Header.Get(ProxyAuthHeader)
	}
	scheme, token, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (a *Auth) user(ctx context.Context, token string) (User, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	now := a.now()
	a.mu.Lock()
	c, hit := a.tokens[key]
	a.mu.Unlock()
	if hit && now.Before(c.expires) {
		return c.u, c.ok, nil
	}
	u, ok, err := a.r.ReviewToken(ctx, token, a.accept.audience())
	if err != nil {
		return User{}, false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	prune(a.tokens, now, func(c cachedUser) time.Time { return c.expires })
	a.tokens[key] = cachedUser{u: u, ok: ok, expires: now.Add(tokenTTL)}
	return u, ok, nil
}

// prune keeps a cache bounded: expired entries go first, everything when still full.
func prune[V any](m map[string]V, now time.Time, expires func(V) time.Time) {
	if len(m) < maxEntries {
		return
	}
	for k, v := range m {
		if !now.Before(expires(v)) {
			delete(m, k)
		}
	}
	if len(m) >= maxEntries {
		clear(m)
	}
}
