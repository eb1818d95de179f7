// Command benchratio prints issue 16's benchmark targets from `go test
// -bench` output: each figure's median over the runs, the median of its
// floor (the same work without our code, measured in the same run), their
// ratio, the target and whether it is met. `make bench` runs it on
// bench.txt:
//
//	go run ./host/internal/benchratio [-strict] [bench.txt | -]
//
// A figure whose benchmark is not in the output prints as not measured;
// that is no error. With -strict a missed target makes the exit status 1.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	strict := flag.Bool("strict", false, "exit 1 when a measured figure misses its target")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: benchratio [-strict] [bench.txt | -]")
		flag.PrintDefaults()
	}
	flag.Parse()
	path := "bench.txt"
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	failed, err := run(path, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(2)
	}
	if *strict && failed > 0 {
		os.Exit(1)
	}
}

// run reports on the benchmark output at path ("-": standard input).
func run(path string, w io.Writer) (int, error) {
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		in = f
	}
	r, err := parse(in)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return report(w, figures, r)
}
