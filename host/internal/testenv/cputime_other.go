//go:build !linux

package testenv

import "time"

// childrenCPU cannot read other processes' CPU time without /proc: 0.
func childrenCPU() time.Duration { return 0 }

// serverCPU cannot read another process's CPU time without /proc.
func serverCPU(int) (time.Duration, bool) { return 0, false }

// postmasterOf cannot find a process's parent without /proc: 0.
func postmasterOf(int) int { return 0 }
