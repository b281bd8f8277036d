package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printTable prints the measurements as a table whose RATIO column
// (runbox's p50 over the baseline's) is what to read first: 0.50x is
// twice as fast as the baseline, 2.00x twice as slow. A column with
// nothing to say holds "-", so that every row has every column.
func printTable(w io.Writer, ms []Measurement) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBACKEND\tN\tP50 ms\tP99 ms\tBASELINE\tBASELINE P50 ms\tRATIO\tPER SECOND\tNOTE")
	for _, m := range ms {
		r := "-"
		if m.Ratio > 0 {
			r = fmt.Sprintf("%.2fx", m.Ratio)
		}
		ps := "-"
		if m.PerSecond > 0 {
			ps = fmt.Sprintf("%.0f", m.PerSecond)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%s\t%.3f\t%s\t%s\t%s\n", m.Name, m.Backend, m.N, m.P50ms, m.P99ms, m.Baseline, m.BaselineP50ms, r, ps, m.Note)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("bench: printing the table: %w", err)
	}
	return nil
}
