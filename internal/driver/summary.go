package driver

import (
	"fmt"
	"strings"

	"github.com/react-torch/react-torch/pkg/tuner"
)

// summary is the sentence a person reads in the log when dec switches
// patterns or judges a switch: what changed, why (the link the model
// blames, and those it cannot tell it from), what it was predicted and
// measured to gain, and the verdict.
func summary(label string, r *tuner.Report, dec *tuner.Decision) string {
	name := label
	if name == "" {
		name = r.Op + " " + r.Algo
	}
	var parts []string
	if dec.Kept || dec.Reverted {
		if c := changeTo(r, dec.Version); c != nil {
			s := fmt.Sprintf("version %d (from epoch %d, %s) measured %.2fx against version %d", c.To, c.Effective, strings.Join(c.Swaps, ", "), c.Measured, c.From)
			if c.Predicted > 0 {
				s += fmt.Sprintf(", predicted %.2fx", c.Predicted)
			}
			s += "; " + c.Verdict
			if dec.Reverted && dec.Pattern != nil {
				s += fmt.Sprintf(": version %d's pattern runs again as version %d from epoch %d", c.From, dec.NewVersion, dec.Effective)
			}
			parts = append(parts, s)
		}
	}
	if dec.Pattern != nil && !dec.Reverted {
		if c := changeTo(r, dec.NewVersion); c != nil {
			s := fmt.Sprintf("switching to version %d at epoch %d by %s", c.To, c.Effective, strings.Join(c.Swaps, ", "))
			if why := cause(r, dec); why != "" {
				s += ": " + why
			}
			if c.Predicted > 0 {
				s += fmt.Sprintf("; predicted %.2fx", c.Predicted)
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%s): %s", name, size(r.Bytes), strings.Join(parts, "; then "))
}

// changeTo is the report's change to version v, nil when it holds none.
func changeTo(r *tuner.Report, v int) *tuner.Change {
	for i := len(r.Changes) - 1; i >= 0; i-- {
		if r.Changes[i].To == v {
			return &r.Changes[i]
		}
	}
	return nil
}

// cause names what a change moves flows away from: the most loaded
// significant link (and the links it cannot be told apart from, or its
// rank when the report reads it as a slow host), else the
// slowest pair that stands out, else the flows the paper's detection
// classed as congested.
func cause(r *tuner.Report, dec *tuner.Decision) string {
	for _, l := range r.Links {
		if !l.Significant {
			continue
		}
		load := fmt.Sprintf("~%.1f competing flows", l.Competing)
		if l.Competing < 0.01 {
			load = fmt.Sprintf("at ~%.0f%% of the line rate", 100/(1+l.Slow))
		}
		s := fmt.Sprintf("moving flows off %s (%s)", l.LinkRef.String(), load)
		if l.Host {
			s = fmt.Sprintf("moving flows off %s (%s, or rank %d slow itself: the flows seen read it slow both ways)", l.LinkRef.String(), load, l.Rank)
		}
		if len(l.AmbiguousWith) > 0 {
			names := make([]string, len(l.AmbiguousWith))
			for i, o := range l.AmbiguousWith {
				names[i] = o.String()
			}
			s += fmt.Sprintf(" or %s (the flows seen cannot tell them apart)", strings.Join(names, ", "))
		}
		return s
	}
	var slow *tuner.PairLoad
	for i := range r.Pairs {
		if p := &r.Pairs[i]; p.Factor > 1 && (slow == nil || p.Factor > slow.Factor) {
			slow = p
		}
	}
	if slow != nil {
		return fmt.Sprintf("moving flows off the pair %d -> %d (%.2fx the median pair's time)", slow.Src, slow.Dst, slow.Factor)
	}
	if n := len(dec.Congested); n > 0 {
		return fmt.Sprintf("%d flows detected as congested", n)
	}
	return ""
}

// size writes a message size in bytes, KiB or MiB.
func size(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.3g MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.3g KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
