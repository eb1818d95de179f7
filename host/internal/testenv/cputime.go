package testenv

import (
	"syscall"
	"testing"
	"time"
)

// TreeCPU is the CPU time, user and system, this process and its live
// children (the plugins it launched) have used so far. Benchmarks report
// its growth per operation: on the shared 2-core machines a rate or a
// latency moves 20% between runs of one binary, while the CPU a piece of
// work costs, summed over every process it crosses, moves far less. A
// child that exited is no longer counted, so take both readings while the
// plugins run. Off Linux only this process is counted (childrenCPU).
func TreeCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + childrenCPU()
}

// ReportCPU reports, as unit, the CPU the process tree spent since the
// TreeCPU reading since, per one of ops operations.
func ReportCPU(b *testing.B, since time.Duration, ops int, unit string) {
	if ops > 0 {
		b.ReportMetric(float64((TreeCPU()-since).Microseconds())/float64(ops), unit)
	}
}
