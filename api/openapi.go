// Package api holds the OpenAPI 3 description of the host's HTTP API
// (openapi.yaml beside this file): the contract frontend teams build
// against. The host serves it at /openapi.yaml and, converted once,
// /openapi.json; host/api's tests validate every request and answer they
// make against it, so it stays true to the handlers.
//
// The package imports nothing of ours, so anything may import it.
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v4"
)

//go:embed openapi.yaml
var document []byte

// YAML returns the OpenAPI document as written. The caller must not
// modify the slice.
func YAML() []byte { return document }

// JSON returns the OpenAPI document converted to JSON. The conversion runs
// once, on the first call (the host's first request for it); the document is
// embedded, so an error means a broken build, which this package's tests
// catch. The caller must not modify the slice.
func JSON() ([]byte, error) { return jsonOnce() }

var jsonOnce = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(document, &doc); err != nil {
		return nil, fmt.Errorf("parse openapi.yaml: %w", err)
	}
	plain, err := jsonValue(doc)
	if err != nil {
		return nil, fmt.Errorf("convert openapi.yaml: %w", err)
	}
	return json.Marshal(plain)
})

// jsonValue turns a decoded YAML value into one encoding/json can write:
// YAML mappings may have non-string keys (an unquoted status code such as
// 200 is an integer), JSON objects may not.
func jsonValue(v any) (any, error) {
	switch n := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, e := range n {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(n))
		for k, e := range n {
			switch k.(type) {
			case string, int, int64, uint64, bool, float64:
			default:
				return nil, fmt.Errorf("a mapping key of type %T has no JSON form", k)
			}
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, e := range n {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}
