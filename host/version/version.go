// Package version is the version of this build, for `agenthost version`
// and anything else that reports it.
package version

import (
	"fmt"
	"runtime"
)

// Version is this build's version. make build stamps it with
// -ldflags "-X github.com/agenthost/agenthost/host/version.Version=..."
// from `git describe --always --dirty`; a plain go build (tests, go run)
// leaves "dev".
var Version = "dev"

// String is the version with the Go release and platform it was built
// for, as `agenthost version` prints it.
func String() string {
	return fmt.Sprintf("%s (%s %s/%s)", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
