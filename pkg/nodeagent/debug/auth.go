package debug

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// User is an authenticated caller.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Reviewer asks the API server who a token belongs to and what that user may do.
type Reviewer interface {
	// ReviewToken returns the token's user; ok is false when the token is not valid.
	ReviewToken(ctx context.Context, token string) (u User, ok bool, err error)
	// Authorize reports whether u may perform verb on the non-resource path.
	Authorize(ctx context.Context, u User, verb, path string) (allowed bool, reason string, err error)
}

// KubeReviewer is a Reviewer backed by TokenReview and SubjectAccessReview. Both are
// review requests: the API server answers them without storing anything.
type KubeReviewer struct {
	authn authnclient.AuthenticationV1Interface
	authz authzclient.AuthorizationV1Interface
}

// NewKubeReviewer returns a reviewer calling the API server of cfg.
func NewKubeReviewer(cfg *rest.Config) (*KubeReviewer, error) {
	authn, err := authnclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &KubeReviewer{authn: authn, authz: authz}, nil
}

// ReviewToken implements Reviewer with a TokenReview.
func (k *KubeReviewer) ReviewToken(ctx context.Context, token string) (User, bool, error) {
	tr, err := k.authn.TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return User{}, false, fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated {
		return User{}, false, nil
	}
	u := User{Name: tr.Status.User.Username, UID: tr.Status.User.UID, Groups: tr.Status.User.Groups}
	if len(tr.Status.User.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range tr.Status.User.Extra {
			u.Extra[k] = v
		}
	}
	return u, true, nil
}

// Authorize implements Reviewer with a SubjectAccessReview on a non-resource URL.
func (k *KubeReviewer) Authorize(ctx context.Context, u User, verb, path string) (bool, string, error) {
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	if len(u.Extra) > 0 {
		sar.Spec.Extra = map[string]authzv1.ExtraValue{}
		for k, v := range u.Extra {
			sar.Spec.Extra[k] = v
		}
	}
	res, err := k.authz.SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	return res.Status.Allowed && !res.Status.Denied, res.Status.Reason, nil
}

// Cache lifetimes, as the kubelet's webhook authenticator and authorizer use them.
const (
	tokenTTL   = time.Minute
	allowTTL   = 5 * time.Minute
	denyTTL    = 30 * time.Second
	maxEntries = 4096
)

// Auth authenticates and authorizes requests before they reach the wrapped handler:
//   - no bearer token (Authorization, else ProxyAuthHeader), or one the API server does
//     not accept: 401;
//   - a user not allowed to "get" the request path (RBAC nonResourceURLs): 403;
//   - the API server cannot be asked: 503 (never served unauthenticated).
//
// Answers are cached briefly (tokens 1m, allow 5m, deny 30s) keyed by a token digest.
type Auth struct {
	r   Reviewer
	now func() time.Time

	mu     sync.Mutex
	tokens map[string]cachedUser
	grants map[string]cachedGrant
}

type cachedUser struct {
	u       User
	ok      bool
	expires time.Time
}

type cachedGrant struct {
	allowed bool
	expires time.Time
}

// NewAuth returns an Auth asking r.
func NewAuth(r Reviewer) *Auth {
	return &Auth{r: r, now: time.Now, tokens: map[string]cachedUser{}, grants: map[string]cachedGrant{}}
}

// Wrap protects next.
func (a *Auth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ballast-node"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		u, ok, err := a.user(r.Context(), token)
		if err != nil {
			http.Error(w, "authentication unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ballast-node", error="invalid_token"`)
			http.Error(w, "Unauthorized: the token was not accepted", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(r.Method)
		if r.Method == http.MethodHead {
			verb = "get"
		}
		allowed, err := a.allowed(r.Context(), u, verb, r.URL.Path)
		if err != nil {
			http.Error(w, "authorization unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !allowed {
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s", u.Name, verb, r.URL.Path), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ProxyAuthHeader carries the caller's bearer token ("Bearer <token>") through the API
// server's pods/proxy, which removes the Authorization header of the request it proxies
// once it has authenticated it. kubectl ballast node sets it; the agent reads it when
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
	u, ok, err := a.r.ReviewToken(ctx, token)
	if err != nil {
		return User{}, false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	prune(a.tokens, now, func(c cachedUser) time.Time { return c.expires })
	a.tokens[key] = cachedUser{u: u, ok: ok, expires: now.Add(tokenTTL)}
	return u, ok, nil
}

func (a *Auth) allowed(ctx context.Context, u User, verb, path string) (bool, error) {
	key := u.Name + "\x00" + u.UID + "\x00" + strings.Join(u.Groups, ",") + "\x00" + verb + "\x00" + path
	now := a.now()
	a.mu.Lock()
	c, hit := a.grants[key]
	a.mu.Unlock()
	if hit && now.Before(c.expires) {
		return c.allowed, nil
	}
	allowed, _, err := a.r.Authorize(ctx, u, verb, path)
	if err != nil {
		return false, err
	}
	ttl := denyTTL
	if allowed {
		ttl = allowTTL
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	prune(a.grants, now, func(c cachedGrant) time.Time { return c.expires })
	a.grants[key] = cachedGrant{allowed: allowed, expires: now.Add(ttl)}
	return allowed, nil
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
