package store

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/valkey-io/valkey-go"
)

// PasswordEnv is the environment variable either binary reads the store password from
// when no --store-password-file is given (the chart mounts a file instead). The password
// is never a flag: command lines are visible in /proc and in pod specs.
const PasswordEnv = "BALLAST_STORE_PASSWORD"

// Config is how to reach the store: the URL plus the credentials and TLS settings that do
// not belong in it. A password in the URL still works but is discouraged (it ends up in
// args or plain env); PasswordFile, then Password, override it.
type Config struct {
	// URL is redis:// or rediss:// (valkey:// and valkeys:// too); cluster seeds as ?addr=.
	URL string
	// Username is the ACL user (default: the URL's, else "default").
	Username string
	// PasswordFile is read on every connection attempt, so a rotated Secret is picked up
	// on the next reconnect; a trailing newline is dropped.
	PasswordFile string
	// Password is used when PasswordFile is empty (from PasswordEnv, never from a flag).
	Password string
	// TLSCAFile is a PEM bundle trusted instead of the system roots (rediss:// only).
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are an optional client certificate (rediss:// only).
	TLSCertFile, TLSKeyFile string
	// TLSServerName overrides the name the server certificate is checked against.
	TLSServerName string
}

// ConfigFromEnv returns a Config for url with the password from PasswordEnv, if set.
func ConfigFromEnv(url string) Config {
	return Config{URL: url, Password: os.Getenv(PasswordEnv)}
}

// AddFlags registers the store flags (not the URL, which each binary names itself) on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Username, "store-username", c.Username, "store ACL user (default: the URL's, else default)")
	fs.StringVar(&c.PasswordFile, "store-password-file", c.PasswordFile,
		"file holding the store password, e.g. a mounted Secret; re-read on every reconnect (else env "+PasswordEnv+")")
	fs.StringVar(&c.TLSCAFile, "store-tls-ca-file", c.TLSCAFile, "PEM CA bundle verifying the store's certificate instead of the system roots (rediss:// only)")
	fs.StringVar(&c.TLSCertFile, "store-tls-cert-file", c.TLSCertFile, "client certificate presented to the store (rediss:// only)")
	fs.StringVar(&c.TLSKeyFile, "store-tls-key-file", c.TLSKeyFile, "key of --store-tls-cert-file")
	fs.StringVar(&c.TLSServerName, "store-tls-server-name", c.TLSServerName, "name checked in the store's certificate (default: the URL's host)")
}

// ValidateFlags reports every inconsistent option at once, without reading any file or
// parsing the URL: a binary starts even with an unusable URL or an unreadable password and
// reports the problem on every connection attempt (so a Secret mounted late is picked up).
func (c Config) ValidateFlags() error {
	var errs []error
	tlsURL := strings.HasPrefix(c.URL, "rediss://") || strings.HasPrefix(c.URL, "valkeys://")
	if !tlsURL && (c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TLSServerName != "") {
		errs = append(errs, fmt.Errorf("--store-tls-* options need a rediss:// store URL, not %s", RedactURL(c.URL)))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("--store-tls-cert-file and --store-tls-key-file go together"))
	}
	return errors.Join(errs...)
}

// Redactor hides this configuration's secrets (the URL's user information, the password
// from the file or the environment).
func (c Config) Redactor() *Redactor {
	extra := []string{c.Password}
	if c.PasswordFile != "" {
		if p, err := readPassword(c.PasswordFile); err == nil {
			extra = append(extra, p)
		}
	}
	return NewRedactor(c.URL, extra...)
}

func readPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading --store-password-file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// ClientOption builds the valkey-go options: it parses the URL, reads the password file and
// the TLS files. Errors name files and the redacted URL, never a secret.
func (c Config) ClientOption() (valkey.ClientOption, error) {
	opt, err := Options(c.URL)
	if err != nil {
		return opt, err
	}
	if c.Username != "" {
		opt.Username = c.Username
	}
	switch {
	case c.PasswordFile != "":
		p, err := readPassword(c.PasswordFile)
		if err != nil {
			return opt, err
		}
		opt.Password = p
	case c.Password != "":
		opt.Password = c.Password
	}
	if opt.TLSConfig == nil {
		return opt, nil
	}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return opt, fmt.Errorf("reading --store-tls-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return opt, fmt.Errorf("--store-tls-ca-file %s holds no PEM certificate", c.TLSCAFile)
		}
		opt.TLSConfig.RootCAs = pool
	}
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return opt, fmt.Errorf("loading the store client certificate: %w", err)
		}
		opt.TLSConfig.Certificates = []tls.Certificate{cert}
	}
	if c.TLSServerName != "" {
		opt.TLSConfig.ServerName = c.TLSServerName
	}
	return opt, nil
}

// Options derives valkey-go options from a redis:// or rediss:// URL. Extra cluster seed
// nodes are given as repeated addr query parameters:
// redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379. No error quotes the URL's
// user information: a password with reserved characters makes url.Parse fail with the
// whole URL in its message, so parse errors are reworded.
func Options(rawURL string) (valkey.ClientOption, error) {
	r := NewRedactor(rawURL)
	shown := RedactURL(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		return valkey.ClientOption{}, fmt.Errorf("store URL %s cannot be parsed (percent-encode reserved characters "+
			"such as / @ : ? # %% in the password, or better give it with --store-password-file)", shown)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "valkey" && u.Scheme != "valkeys" {
		return valkey.ClientOption{}, fmt.Errorf("store URL %s: scheme must be redis:// or rediss://", shown)
	}
	opt, err := valkey.ParseURL(rawURL)
	if err != nil {
		return valkey.ClientOption{}, r.Error(fmt.Errorf("store URL %s: %w", shown, err))
	}
	// No client-side caching (nothing is read through it): the handshake then sends no
	// CLIENT TRACKING, which the agent's ACL user may not run.
	opt.DisableCache = true
	return opt, nil
}
