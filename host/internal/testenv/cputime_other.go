//go:build !linux

package testenv

import "time"

// childrenCPU cannot read other processes' CPU time without /proc: 0.
func childrenCPU() time.Duration { return 0 }
