// Package pluginmgr finds the host's plugins from config, launches them
// safely (absolute paths, checksums, mTLS, a scrubbed environment), checks
// who they are, watches them, and relaunches them when they die.
package pluginmgr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Config is one plugin instance, as an operator wrote it in
// plugin-configs/NAME.hcl:
//
//	plugin "mock" {
//	  kind    = "engine"
//	  command = "agenthost-engine-mock"   # bare name: looked up in the plugin dir
//	  args    = []
//	  sha256  = "…"                       # optional; refuses a different binary
//	  env     = ["OPENAI_API_KEY"]        # host variables the plugin may see
//	  config { root = "/srv/sandboxes" }  # handed to the plugin as JSON
//	}
//
// A plugin run by an interpreter names it and its script:
//
//	command = "node"                                  # not in the plugin dir: the host's PATH
//	args    = ["${plugin_dir}/agenthost-engine-echo-ts.js"]
//
// Strings may use ${plugin_dir} and ${config_dir} (the folder of the HCL
// file), both absolute.
//
// A toolpack's block may also override its tools' default permissions and
// bound their calls:
//
//	permissions    = { coding_agent_run_command = "allow" }  # allow | ask | deny
//	tool_timeout_s = 300                                      # else the host's
//
// A Go plugin's block may bound how many cores run its Go code at once:
//
//	max_procs = 1   # sets GOMAXPROCS in the plugin's environment
type Config struct {
	Name    string
	Kind    plugin.Kind
	Command string
	Args    []string
	SHA256  string
	Env     []string
	Enabled bool
	// Config is the config block as a JSON object.
	Config json.RawMessage
	// Permissions override a toolpack's default permission per tool name.
	Permissions map[string]plugin.Permission
	// ToolTimeout bounds each call of a toolpack's tools; 0 means the
	// host's tool_timeout_s.
	ToolTimeout time.Duration
	// MaxProcs is the GOMAXPROCS the plugin runs with; 0 leaves Go's
	// default (one per core).
	MaxProcs int
	// File is the HCL file the block came from (for messages).
	File string
}

type hclFile struct {
	Plugins []hclPlugin `hcl:"plugin,block"`
	Remain  hcl.Body    `hcl:",remain"`
}

type hclPlugin struct {
	Name    string     `hcl:"name,label"`
	Kind    string     `hcl:"kind"`
	Command string     `hcl:"command"`
	Args    []string   `hcl:"args,optional"`
	SHA256  string     `hcl:"sha256,optional"`
	Env     []string   `hcl:"env,optional"`
	Enabled *bool      `hcl:"enabled,optional"`
	Config  *hclConfig `hcl:"config,block"`

	Permissions  map[string]string `hcl:"permissions,optional"`
	ToolTimeoutS *int              `hcl:"tool_timeout_s,optional"`
	MaxProcs     *int              `hcl:"max_procs,optional"`
}

// maxToolTimeoutS caps tool_timeout_s: a call held open for more than an hour
// is a stuck call, and the run's sandbox cannot be reaped under it.
const maxToolTimeoutS = 3600

// maxMaxProcs caps max_procs well above any machine's core count; a larger
// number is a typo, not a wish.
const maxMaxProcs = 1024

type hclConfig struct {
	Body hcl.Body `hcl:",remain"`
}

var (
	namePattern   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	envPattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// LoadConfigDir reads every *.hcl file of dir, in name order. A missing dir
// is an error: a host with no plugins cannot run anything. pluginDir is
// what ${plugin_dir} stands for.
func LoadConfigDir(dir, pluginDir string) ([]Config, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("plugin config dir: %w", err)
	}
	sort.Strings(files)
	var out []Config
	seen := map[string]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		cfgs, err := ParseConfig(f, src, pluginDir)
		if err != nil {
			return nil, err
		}
		for _, c := range cfgs {
			if prev, dup := seen[c.Name]; dup {
				return nil, fmt.Errorf("%s: plugin %q is already defined in %s", f, c.Name, prev)
			}
			seen[c.Name] = f
			out = append(out, c)
		}
	}
	return out, nil
}

// ParseConfig parses one plugin HCL file; pluginDir is what ${plugin_dir}
// stands for (an empty one leaves it undefined).
func ParseConfig(filename string, src []byte, pluginDir string) ([]Config, error) {
	p := hclparse.NewParser()
	f, diags := p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, fmt.Errorf("parse %s: %s", filename, diags.Error())
	}
	ctx, err := evalContext(filename, pluginDir)
	if err != nil {
		return nil, err
	}
	var raw hclFile
	if diags := gohcl.DecodeBody(f.Body, ctx, &raw); diags.HasErrors() {
		return nil, fmt.Errorf("decode %s: %s", filename, diags.Error())
	}
	if attrs, _ := raw.Remain.JustAttributes(); len(attrs) > 0 {
		for name := range attrs {
			return nil, fmt.Errorf("%s: unknown top-level attribute %q (only plugin blocks belong here)", filename, name)
		}
	}
	var out []Config
	for _, b := range raw.Plugins {
		c, err := b.toConfig(filename, ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// evalContext defines the variables plugin files may use: the folders a
// script or a data path is most often relative to, made absolute because a
// plugin's working folder is the host's.
func evalContext(filename, pluginDir string) (*hcl.EvalContext, error) {
	vars := map[string]cty.Value{}
	dir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		return nil, err
	}
	vars["config_dir"] = cty.StringVal(dir)
	if pluginDir != "" {
		abs, err := filepath.Abs(pluginDir)
		if err != nil {
			return nil, err
		}
		vars["plugin_dir"] = cty.StringVal(abs)
	}
	return &hcl.EvalContext{Variables: vars}, nil
}

func (b hclPlugin) toConfig(filename string, ctx *hcl.EvalContext) (Config, error) {
	c := Config{
		Name: b.Name, Kind: plugin.Kind(b.Kind), Command: b.Command, Args: b.Args,
		SHA256: strings.ToLower(strings.TrimSpace(b.SHA256)), Env: b.Env, Enabled: true, File: filename,
	}
	if b.Enabled != nil {
		c.Enabled = *b.Enabled
	}
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%s: plugin %q: %s", filename, b.Name, fmt.Sprintf(format, args...))
	}
	if !namePattern.MatchString(c.Name) {
		return fail("name must match %s", namePattern)
	}
	switch c.Kind {
	case plugin.KindEngine, plugin.KindSandbox, plugin.KindToolpack:
	default:
		return fail("kind %q is not one of engine, sandbox, toolpack", b.Kind)
	}
	if strings.TrimSpace(c.Command) == "" {
		return fail("command is empty")
	}
	if c.SHA256 != "" && !sha256Pattern.MatchString(c.SHA256) {
		return fail("sha256 must be 64 hex digits")
	}
	for _, e := range c.Env {
		if !envPattern.MatchString(e) {
			return fail("env entry %q is not a variable name (list names; values come from the host's environment)", e)
		}
	}
	if b.MaxProcs != nil {
		if n := *b.MaxProcs; n < 1 || n > maxMaxProcs {
			return fail("max_procs is %d; it must be between 1 and %d", n, maxMaxProcs)
		}
		if slices.Contains(c.Env, "GOMAXPROCS") {
			return fail("env lists GOMAXPROCS and max_procs is set; keep one")
		}
		c.MaxProcs = *b.MaxProcs
	}
	if (len(b.Permissions) > 0 || b.ToolTimeoutS != nil) && c.Kind != plugin.KindToolpack {
		return fail("permissions and tool_timeout_s belong to toolpacks only")
	}
	for tool, perm := range b.Permissions {
		switch p := plugin.Permission(perm); p {
		case plugin.PermissionAllow, plugin.PermissionAsk, plugin.PermissionDeny:
			if c.Permissions == nil {
				c.Permissions = map[string]plugin.Permission{}
			}
			c.Permissions[tool] = p
		default:
			return fail("permissions.%s is %q; it must be allow, ask or deny", tool, perm)
		}
	}
	if b.ToolTimeoutS != nil {
		if t := *b.ToolTimeoutS; t < 1 || t > maxToolTimeoutS {
			return fail("tool_timeout_s is %d; it must be between 1 and %d", t, maxToolTimeoutS)
		}
		c.ToolTimeout = time.Duration(*b.ToolTimeoutS) * time.Second
	}
	c.Config = json.RawMessage("{}")
	if b.Config != nil {
		attrs, diags := b.Config.Body.JustAttributes()
		if diags.HasErrors() {
			return fail("config block: %s", diags.Error())
		}
		obj := map[string]json.RawMessage{}
		for name, attr := range attrs {
			v, diags := attr.Expr.Value(ctx)
			if diags.HasErrors() {
				return fail("config.%s: %s", name, diags.Error())
			}
			js, err := ctyjson.Marshal(v, v.Type())
			if err != nil {
				return fail("config.%s: %v", name, err)
			}
			obj[name] = js
		}
		js, err := json.Marshal(obj)
		if err != nil {
			return fail("config: %v", err)
		}
		c.Config = js
	}
	return c, nil
}

// resolveCommand turns the configured command into an absolute path: an
// absolute path stays, a path with a slash is relative to the config file's
// folder, a bare name is looked up in the plugin dir and then, for
// interpreters such as node or python3, on the host's PATH. The file must
// exist and be executable.
func resolveCommand(c Config, pluginDir string) (string, error) {
	p := c.Command
	switch {
	case filepath.IsAbs(p):
	case strings.Contains(p, "/"):
		p = filepath.Join(filepath.Dir(c.File), p)
	default:
		p = filepath.Join(pluginDir, p)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			found, lerr := exec.LookPath(c.Command)
			if lerr != nil {
				return "", fmt.Errorf("plugin binary %s: not in the plugin dir %s (run `make build`?) nor on the host's PATH", c.Command, pluginDir)
			}
			p = found
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("plugin binary %s: %w (run `make build`?)", abs, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("plugin binary %s is not an executable file", abs)
	}
	return abs, nil
}
