package tuner

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report as an operator reads it, after the first
// line its caller writes (which collective): the last batch's collective
// time, what the link model sees (Model react) and the changes. node names
// a rank of the pattern (nil: "rank 3"); where a pattern runs over hosts,
// the caller names hosts.
func (r *Report) WriteText(w io.Writer, node func(rank int) string) {
	if node == nil {
		node = rankName
	}
	if t := r.Time; t != nil {
		fmt.Fprintf(w, "collective time, batch %d (%d epochs): mean %s, p95 %s\n", t.Batch, t.Epochs, millis(t.Mean), millis(t.P95))
	}
	if r.Model == ModelReact {
		fmt.Fprintf(w, "link model: one flow varies %.2f (log) from epoch to epoch; the links miss the flows' means by %.2f\n", r.Noise, r.RMS)
		if r.Misfit {
			fmt.Fprintln(w, "  (more than a network of links explains: a busy CPU slows flows too, so a load below may be a host's, not a link's)")
		}
		for i, h := range r.SlowHosts {
			if i == 0 {
				fmt.Fprintln(w, "slow hosts (slow themselves, both ways alike, rather than their links congested):")
			}
			busy := ""
			if h.Kind == "busy" {
				busy = fmt.Sprintf(", busy: its sends and receives share it with %.1f competing flows", h.Busy)
			}
			fmt.Fprintf(w, "  %-9s %s x%.2f ± %.2f: sends x%.2f, receives x%.2f%s\n", node(h.Rank), h.Kind, h.Factor, h.SE, h.Send, h.Receive, busy)
		}
		if len(r.Links) == 0 {
			fmt.Fprintln(w, "no link carries competing flows")
		}
		for i, l := range r.Links {
			if i == 0 {
				fmt.Fprintln(w, "links with competing flows or below the line rate, most first:")
			}
			what := "not significant"
			switch {
			case l.Host:
				what = "read as " + node(l.Rank) + " slow itself"
			case l.Significant:
				what = "congested"
			}
			fmt.Fprintf(w, "  %-20s %s  %s", l.named(node), loadText(l), what)
			if len(l.AmbiguousWith) > 0 {
				names := make([]string, len(l.AmbiguousWith))
				for k, o := range l.AmbiguousWith {
					names[k] = o.named(node)
				}
				fmt.Fprintf(w, "; or %s: the flows seen cannot tell them apart", strings.Join(names, ", "))
			}
			fmt.Fprintln(w)
		}
		for i, p := range r.Pairs {
			if i == 0 {
				fmt.Fprintln(w, "pairs that stand out (their flows' time over what the links explain):")
			}
			fmt.Fprintf(w, "  %s -> %s  x%.2f ± %.2f\n", node(int(p.Src)), node(int(p.Dst)), p.Factor, p.SE)
		}
	}
	if len(r.Changes) == 0 {
		fmt.Fprintln(w, "no changes")
	}
	for i, c := range r.Changes {
		if i == 0 {
			fmt.Fprintln(w, "changes:")
		}
		fmt.Fprintf(w, "  epoch %d (batch %d): version %d -> %d from epoch %d by %s", c.Epoch, c.Batch, c.From, c.To, c.Effective, strings.Join(c.Swaps, ", "))
		if c.Predicted > 0 {
			fmt.Fprintf(w, "; predicted %.2fx", c.Predicted)
		}
		if c.Measured > 0 {
			fmt.Fprintf(w, ", measured %.2fx", c.Measured)
		}
		fmt.Fprintf(w, "; %s\n", c.Verdict)
	}
}

func millis(s float64) string { return fmt.Sprintf("%.3f ms", s*1e3) }

// loadText says what the link model sees on a link: its competing flows,
// its rate where it reads slower than the line rate, or both.
func loadText(l LinkLoad) string {
	count := fmt.Sprintf("%7.2f ± %.2f competing flows", l.Competing, l.SE)
	if l.Slow < 0.01 {
		return count
	}
	rate := fmt.Sprintf("at %.1f%% ± %.1f of the line rate", 100/(1+l.Slow), 100*l.SlowSE/((1+l.Slow)*(1+l.Slow)))
	if l.Competing < 0.01 {
		return rate
	}
	return rate + ", " + strings.TrimSpace(count)
}
