// Package compat holds the wire-compatibility check of the plugin protocol:
// what was released under a major version (api_version 1) must stay on the
// wire unchanged. Fields, enum values, services and methods may be added;
// none may be removed, renumbered, retyped or renamed in meaning.
package compat

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// The packages whose files are checked register them on import.
	_ "github.com/agenthost/agenthost/sdk/internal/pb/enginev1"
	_ "github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	_ "github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	_ "github.com/agenthost/agenthost/sdk/internal/pb/toolpackv1"
	_ "github.com/agenthost/agenthost/sdk/internal/pb/workspacev1"
)

// released is the wire surface of the last release: one line per field,
// enum value and method. Regenerate it only when releasing, with
// go test ./sdk/internal/pb/compat/ -update
const released = "released-v1.txt"

var update = flag.Bool("update", false, "rewrite "+released+" from the current protos (at a release only)")

// surface lists what the wire carries for every agenthost proto file.
func surface() []string {
	var out []string
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "agenthost.") {
			return true
		}
		msgs := fd.Messages()
		for i := 0; i < msgs.Len(); i++ {
			out = append(out, messageSurface(msgs.Get(i))...)
		}
		enums := fd.Enums()
		for i := 0; i < enums.Len(); i++ {
			out = append(out, enumSurface(enums.Get(i))...)
		}
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			s := svcs.Get(i)
			for j := 0; j < s.Methods().Len(); j++ {
				m := s.Methods().Get(j)
				out = append(out, fmt.Sprintf("rpc %s.%s(%s%s) returns (%s%s)", s.FullName(), m.Name(),
					stream(m.IsStreamingClient()), m.Input().FullName(), stream(m.IsStreamingServer()), m.Output().FullName()))
			}
		}
		return true
	})
	sort.Strings(out)
	return out
}

func stream(b bool) string {
	if b {
		return "stream "
	}
	return ""
}

func messageSurface(m protoreflect.MessageDescriptor) []string {
	var out []string
	fields := m.Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		typ := f.Kind().String()
		switch {
		case f.Message() != nil:
			typ = string(f.Message().FullName())
		case f.Enum() != nil:
			typ = string(f.Enum().FullName())
		}
		oneof := ""
		if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
			oneof = " oneof " + string(o.Name())
		}
		out = append(out, fmt.Sprintf("field %s %d %s %s %s%s", m.FullName(), f.Number(), f.Name(), f.Cardinality(), typ, oneof))
	}
	nested := m.Messages()
	for i := 0; i < nested.Len(); i++ {
		if !nested.Get(i).IsMapEntry() {
			out = append(out, messageSurface(nested.Get(i))...)
		}
	}
	enums := m.Enums()
	for i := 0; i < enums.Len(); i++ {
		out = append(out, enumSurface(enums.Get(i))...)
	}
	return out
}

func enumSurface(e protoreflect.EnumDescriptor) []string {
	var out []string
	for i := 0; i < e.Values().Len(); i++ {
		v := e.Values().Get(i)
		out = append(out, fmt.Sprintf("enum %s %d %s", e.FullName(), v.Number(), v.Name()))
	}
	return out
}

// TestReleasedWireSurfaceIsKept: every line of the released surface is
// still there. A removed, renumbered or retyped field, a removed enum value
// or method fails, naming the line; additions pass.
func TestReleasedWireSurfaceIsKept(t *testing.T) {
	current := surface()
	if len(current) < 100 {
		t.Fatalf("only %d lines of protocol found: are the pb packages still imported?", len(current))
	}
	if *update {
		if err := os.WriteFile(released, []byte(strings.Join(current, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d lines", released, len(current))
		return
	}
	b, err := os.ReadFile(released)
	if err != nil {
		t.Fatalf("read %s: %v", released, err)
	}
	have := map[string]bool{}
	for _, l := range current {
		have[l] = true
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !have[l] {
			t.Errorf("breaking change to the released protocol (api_version 1): %q is gone; add fields instead, or start v2", l)
		}
	}
}
