package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Marks of a line of the report.
const (
	markPass        = "pass"
	markFail        = "FAIL"
	markInfo        = "info" // a ratio to a floor with no target
	markNotMeasured = "not measured"
)

// row is one figure, evaluated and formatted.
type row struct {
	name, ours, floor, ratio, target, mark string
}

// evaluate takes the medians of f's figures in r and holds them against
// its target.
func evaluate(f figure, r results) row {
	out := row{name: f.name, ours: "-", floor: "-", ratio: "-", target: targetText(f), mark: markNotMeasured}
	ours, ok := r.median(f.ours.bench, f.ours.unit)
	if ok {
		out.ours = format(ours, f.ours.unit)
	}
	var floor float64
	floorOK := false
	if f.floor != nil {
		if floor, floorOK = r.median(f.floor.bench, f.floor.unit); floorOK {
			if f.times != 0 {
				out.floor = fmt.Sprintf("%g × %s", f.times, format(floor, f.floor.unit))
				floor *= f.times
			} else {
				out.floor = format(floor, f.floor.unit)
			}
		}
	}
	if ok && floorOK && floor != 0 {
		out.ratio = fmt.Sprintf("%.2f×", ours/floor)
	}
	if !ok {
		return out
	}
	value := ours
	if f.floor != nil && !f.absolute {
		if !floorOK || floor == 0 {
			return out // the ratio is the figure: without its floor it is not measured
		}
		value = ours / floor
	}
	switch {
	case f.target == 0:
		out.mark = markInfo
	case f.atMost && value <= f.target, !f.atMost && value >= f.target:
		out.mark = markPass
	default:
		out.mark = markFail
	}
	return out
}

// targetText is f's target as the table prints it.
func targetText(f figure) string {
	if f.target == 0 {
		return "-"
	}
	op := "≥"
	if f.atMost {
		op = "≤"
	}
	if f.floor != nil && !f.absolute {
		return fmt.Sprintf("%s %g× floor", op, f.target)
	}
	return op + " " + format(f.target, f.ours.unit)
}

// format prints a value in a unit people read: times in ns, µs or ms as
// the size needs, rates in thousands.
func format(v float64, unit string) string {
	switch {
	case unit == "ns/op":
		switch {
		case v >= 1e9:
			return fmt.Sprintf("%.2f s", v/1e9)
		case v >= 1e6:
			return fmt.Sprintf("%.2f ms", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.1f µs", v/1e3)
		}
		return fmt.Sprintf("%.0f ns", v)
	case strings.HasPrefix(unit, "p50-µs"), strings.HasPrefix(unit, "p99-µs"):
		return fmt.Sprintf("%.2f ms", v/1e3)
	case strings.HasPrefix(unit, "cpu-µs/"), strings.HasPrefix(unit, "pg-cpu-µs/"):
		_, per, _ := strings.Cut(unit, "/")
		return fmt.Sprintf("%.2f ms CPU/%s", v/1e3, per)
	case unit == "events/s":
		return fmt.Sprintf("%.1fk events/s", v/1e3)
	case strings.HasSuffix(unit, "-MB"):
		return fmt.Sprintf("%.1f MB", v)
	case strings.HasSuffix(unit, "-KB"):
		return fmt.Sprintf("%.0f KB", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

// report writes the table of figures and a summary line; it returns how
// many figures failed their targets.
func report(w io.Writer, figs []figure, r results) (failed int, err error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tours\tfloor\tratio\ttarget\tmark")
	counts := map[string]int{}
	for _, f := range figs {
		x := evaluate(f, r)
		counts[x.mark]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.name, x.ours, x.floor, x.ratio, x.target, x.mark)
	}
	if err := tw.Flush(); err != nil {
		return 0, err
	}
	_, err = fmt.Fprintf(w, "\n%d pass, %d FAIL, %d info, %d not measured (medians over each benchmark's runs)\n",
		counts[markPass], counts[markFail], counts[markInfo], counts[markNotMeasured])
	return counts[markFail], err
}
