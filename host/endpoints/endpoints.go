// Package endpoints decides where a model's requests may go. An API key in
// the host's environment is the operator's secret: it may only travel to
// the provider base URLs the operator bound it to. A model names its key by
// variable (api_key_env) and its endpoint by base_url; Policy.Check refuses
// any pairing the operator did not allow, when the model is created and
// again when a run pins it (a binding removed from the config takes effect
// at once, and models stored before the policy existed are caught too).
package endpoints

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
)

// Provider defaults: what an engine talks to when a model has no base_url.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// Binding allows one key variable to be sent to a set of base URLs. A
// binding with no KeyEnv lists endpoints that need no key (a shared local
// model server, say), which tenants may then use.
type Binding struct {
	// Name labels the binding in errors and logs (the HCL block label).
	Name string
	// KeyEnv is the environment variable holding the key, or "".
	KeyEnv string
	// BaseURLs are the endpoints the key may be sent to.
	BaseURLs []string
}

// Policy is the operator's key-to-endpoint bindings, normalised.
type Policy struct {
	// byKey maps a key variable to its allowed normalised endpoints.
	byKey map[string]map[string]bool
	// listed holds every endpoint named by any binding.
	listed map[string]bool
}

// Refusal is why a model's endpoint is not allowed. Field names the
// request field to blame ("base_url" or "api_key_env").
type Refusal struct {
	Field   string
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// New builds a policy from the operator's bindings plus the implicit ones
// for the variables the host seeds models from: OPENAI_API_KEY may go to
// OPENAI_BASE_URL when set (else OpenAI), ANTHROPIC_API_KEY to
// ANTHROPIC_BASE_URL when set (else Anthropic). A binding the operator
// writes for one of those variables replaces its implicit one. It fails on
// a base URL that is not an absolute http(s) URL.
func New(bindings []Binding) (*Policy, error) {
	p := &Policy{byKey: map[string]map[string]bool{}, listed: map[string]bool{}}
	explicit := map[string]bool{}
	for _, b := range bindings {
		explicit[b.KeyEnv] = true
	}
	implicit := []Binding{
		{Name: "openai (implicit)", KeyEnv: "OPENAI_API_KEY", BaseURLs: []string{envOr("OPENAI_BASE_URL", DefaultOpenAIBaseURL)}},
		{Name: "anthropic (implicit)", KeyEnv: "ANTHROPIC_API_KEY", BaseURLs: []string{envOr("ANTHROPIC_BASE_URL", DefaultAnthropicBaseURL)}},
	}
	for _, b := range implicit {
		if !explicit[b.KeyEnv] {
			bindings = append(bindings, b)
		}
	}
	for _, b := range bindings {
		if strings.ContainsAny(b.KeyEnv, "= \t") {
			return nil, fmt.Errorf("provider %q: api_key_env %q is not a variable name", b.Name, b.KeyEnv)
		}
		set := p.byKey[b.KeyEnv]
		if set == nil {
			set = map[string]bool{}
			p.byKey[b.KeyEnv] = set
		}
		for _, raw := range b.BaseURLs {
			n, err := Normalize(raw)
			if err != nil {
				return nil, fmt.Errorf("provider %q: %w", b.Name, err)
			}
			set[n] = true
			p.listed[n] = true
		}
	}
	return p, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Resolve is the base URL a model's requests really go to: its own, or its
// provider's default when it has none. It is "" for a provider with no
// default the host knows.
func Resolve(provider, baseURL string) string {
	if baseURL != "" {
		return baseURL
	}
	switch strings.ToLower(provider) {
	case "openai":
		return DefaultOpenAIBaseURL
	case "anthropic":
		return DefaultAnthropicBaseURL
	}
	return ""
}

// Normalize makes equal endpoints compare equal: lower-case scheme and
// host, no default port, no trailing slash. It refuses anything but an
// absolute http(s) URL without credentials, query or fragment, since
// those would let one allowed entry smuggle another destination.
func Normalize(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("base URL %q: %v", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("base URL %q is not an absolute http(s) URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("base URL %q may not carry credentials, a query or a fragment", raw)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// Host is the host[:port] a model's requests go to, for showing tenants
// where their prompts are sent; "" when unknown.
func Host(provider, baseURL string) string {
	u, err := url.Parse(Resolve(provider, baseURL))
	if err != nil {
		return ""
	}
	return u.Host
}

// Check decides whether a model may use its endpoint. A model with a key
// may only send it to a base URL bound to that key. A model without one
// may go anywhere when the platform's operator makes it (platform), and
// only to endpoints the operator listed when a tenant does: a tenant must
// not aim the host's network at addresses of its choosing.
func (p *Policy) Check(provider, baseURL, keyEnv string, platform bool) error {
	resolved := Resolve(provider, baseURL)
	if resolved == "" {
		if keyEnv != "" || !platform {
			return &Refusal{Field: "base_url", Message: fmt.Sprintf("provider %q has no default endpoint: set base_url", provider)}
		}
		return nil // an engine's own provider default, set by the operator
	}
	n, err := Normalize(resolved)
	if err != nil {
		return &Refusal{Field: "base_url", Message: err.Error()}
	}
	if keyEnv != "" {
		allowed, ok := p.byKey[keyEnv]
		if !ok {
			return &Refusal{Field: "api_key_env", Message: fmt.Sprintf("the operator has not bound %s to any endpoint (a provider block in the host config)", keyEnv)}
		}
		if !allowed[n] {
			return &Refusal{Field: "base_url", Message: fmt.Sprintf("the key in %s may only be sent to %s, not %s", keyEnv, strings.Join(sorted(allowed), ", "), n)}
		}
		return nil
	}
	if !platform && !p.listed[n] {
		return &Refusal{Field: "base_url", Message: fmt.Sprintf("%s is not one of the endpoints the operator allows (%s)", n, strings.Join(sorted(p.listed), ", "))}
	}
	return nil
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
