package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/react-torch/react-torch/pkg/ten"
)

func (s *Scenario) check() error {
	hosts := s.net.Hosts()
	names := map[string]bool{}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if j.Name == "" {
			j.Name = fmt.Sprintf("job%d", i)
		}
		if names[j.Name] {
			return fmt.Errorf("jobs[%d]: name %q used twice", i, j.Name)
		}
		names[j.Name] = true
		if err := j.check(i, s, hosts); err != nil {
			return fmt.Errorf("jobs[%d] (%s): %w", i, j.Name, err)
		}
	}
	for i := range s.External {
		if err := s.External[i].check(s, hosts); err != nil {
			return fmt.Errorf("external[%d]: %w", i, err)
		}
	}
	for i := range s.Failures {
		if err := s.Failures[i].check(s); err != nil {
			return fmt.Errorf("failures[%d]: %w", i, err)
		}
	}
	if err := s.Noise.check(); err != nil {
		return fmt.Errorf("noise: %w", err)
	}
	vn := map[string]bool{}
	for i := range s.Variants {
		v := &s.Variants[i]
		if v.Name == "" {
			return fmt.Errorf("variants[%d]: no name", i)
		}
		if vn[v.Name] {
			return fmt.Errorf("variants[%d]: name %q used twice", i, v.Name)
		}
		vn[v.Name] = true
		if !v.NoExternal && !v.NoFailures && len(v.Swaps) == 0 && !v.Flat {
			return fmt.Errorf("variants[%d] (%s): changes nothing (give no_external, no_failures, swaps or flat)", i, v.Name)
		}
		if v.Flat && len(v.Swaps) > 0 {
			return fmt.Errorf("variants[%d] (%s): swaps apply to the hierarchical pattern, not to the flat one", i, v.Name)
		}
		for k := range v.Swaps {
			if sw := &v.Swaps[k]; sw.Job < 0 || sw.Job >= len(s.Jobs) {
				return fmt.Errorf("variants[%d] (%s): swaps[%d]: job %d out of range [0, %d)", i, v.Name, k, sw.Job, len(s.Jobs))
			}
		}
	}
	return nil
}

func (j *JobSpec) check(index int, s *Scenario, hosts int) error {
	if _, err := ten.ParseOp(j.Op); err != nil {
		return err
	}
	if j.Ranks < 2 {
		return fmt.Errorf("ranks = %d, want >= 2", j.Ranks)
	}
	if j.Ranks > hosts {
		return fmt.Errorf("%d ranks on a topology of %d hosts (one rank a host)", j.Ranks, hosts)
	}
	if !(j.Bytes > 0) || math.IsInf(j.Bytes, 0) {
		return fmt.Errorf("bytes = %v, want a positive message size", j.Bytes)
	}
	if j.Ports < 0 {
		return fmt.Errorf("ports = %d, want >= 1 (0 means %d)", j.Ports, DefaultPorts)
	}
	if !(j.Gap >= 0) || math.IsInf(j.Gap, 0) {
		return fmt.Errorf("gap = %v s, want a finite number >= 0", j.Gap)
	}
	pl := &j.Placement
	lo, hi, err := pool(pl.Pool, hosts)
	if err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	size := hi - lo + 1
	switch pl.Kind {
	case "", "first":
		if pl.Offset < 0 || pl.Offset+j.Ranks > size {
			return fmt.Errorf("placement first: offset %d + %d ranks exceeds the pool of %d hosts", pl.Offset, j.Ranks, size)
		}
	case "hosts":
		if len(pl.Hosts) != j.Ranks {
			return fmt.Errorf("placement hosts: %d hosts for %d ranks", len(pl.Hosts), j.Ranks)
		}
		seen := map[int]int{}
		for r, h := range pl.Hosts {
			if h < 0 || h >= hosts {
				return fmt.Errorf("placement hosts: rank %d on host %d, out of range [0, %d)", r, h, hosts)
			}
			if q, dup := seen[h]; dup {
				return fmt.Errorf("placement hosts: ranks %d and %d both on host %d (one rank a host)", q, r, h)
			}
			seen[h] = r
		}
	case "spread":
		if pl.Offset < 0 || pl.Offset >= size || j.Ranks > size {
			return fmt.Errorf("placement spread: %d ranks from offset %d over a pool of %d hosts", j.Ranks, pl.Offset, size)
		}
	case "random":
		if j.Ranks > size {
			return fmt.Errorf("placement random: %d ranks in a pool of %d hosts", j.Ranks, size)
		}
	case "overlap":
		if pl.With < 0 || pl.With >= index {
			return fmt.Errorf("placement overlap: with = %d, want an earlier job in [0, %d)", pl.With, index)
		}
		if pl.Shared < 0 || pl.Shared > j.Ranks || pl.Shared > s.Jobs[pl.With].Ranks {
			return fmt.Errorf("placement overlap: shared = %d, want in [0, min(%d, %d)]", pl.Shared, j.Ranks, s.Jobs[pl.With].Ranks)
		}
	default:
		return fmt.Errorf("placement: unknown kind %q (want first, hosts, spread, random or overlap)", pl.Kind)
	}
	return nil
}

// pool returns the inclusive host range of a placement.
func pool(p []int, hosts int) (lo, hi int, err error) {
	switch len(p) {
	case 0:
		return 0, hosts - 1, nil
	case 2:
		if p[0] < 0 || p[1] >= hosts || p[0] > p[1] {
			return 0, 0, fmt.Errorf("pool [%d, %d] is not a host range within [0, %d]", p[0], p[1], hosts-1)
		}
		return p[0], p[1], nil
	}
	return 0, 0, fmt.Errorf("pool has %d numbers, want [lo, hi]", len(p))
}

func (e *ExternalSpec) check(s *Scenario, hosts int) error {
	if e.P < 0 {
		return fmt.Errorf("p = %d, want >= 0", e.P)
	}
	for k, pr := range e.Pairs {
		switch {
		case pr.Src < 0 || pr.Src >= hosts:
			return fmt.Errorf("pairs[%d]: source host %d out of range [0, %d)", k, pr.Src, hosts)
		case pr.Dst < 0 || pr.Dst >= hosts:
			return fmt.Errorf("pairs[%d]: destination host %d out of range [0, %d)", k, pr.Dst, hosts)
		case pr.Src == pr.Dst:
			return fmt.Errorf("pairs[%d]: source and destination are both host %d", k, pr.Src)
		}
	}
	if e.Random < 0 {
		return fmt.Errorf("random = %d, want >= 0", e.Random)
	}
	if e.Job < 0 || e.Job >= len(s.Jobs) {
		return fmt.Errorf("job %d out of range [0, %d)", e.Job, len(s.Jobs))
	}
	switch e.Direction {
	case "", "out", "in":
	default:
		return fmt.Errorf("direction %q, want out (from the job's ranks) or in (into them)", e.Direction)
	}
	for _, r := range e.Ranks {
		if r < 0 || r >= s.Jobs[e.Job].Ranks {
			return fmt.Errorf("rank %d out of range [0, %d) of job %s", r, s.Jobs[e.Job].Ranks, s.Jobs[e.Job].Name)
		}
	}
	if e.FromEpoch < 0 || e.FromEpoch >= s.Epochs {
		return fmt.Errorf("from_epoch = %d, want in [0, epochs = %d) (epochs of job %s)", e.FromEpoch, s.Epochs, s.Jobs[e.Job].Name)
	}
	if t := e.ToEpoch; t != nil && (*t <= e.FromEpoch || *t > s.Epochs) {
		return fmt.Errorf("to_epoch = %d, want in (from_epoch = %d, epochs = %d] (exclusive; leave it out for no end)", *t, e.FromEpoch, s.Epochs)
	}
	return nil
}

func (f *FailureSpec) check(s *Scenario) error {
	if !(f.Capacity > 0) || math.IsInf(f.Capacity, 0) {
		return fmt.Errorf("capacity = %v bits/s, want a positive number", f.Capacity)
	}
	if f.Random < 0 {
		return fmt.Errorf("random = %d, want >= 0", f.Random)
	}
	switch f.Scope {
	case "", "any", "fabric", "job":
	default:
		return fmt.Errorf("scope %q, want any, fabric or job", f.Scope)
	}
	if f.Job < 0 || f.Job >= len(s.Jobs) {
		return fmt.Errorf("job %d out of range [0, %d)", f.Job, len(s.Jobs))
	}
	for k, l := range f.Links {
		if _, err := findCable(s.net, l); err != nil {
			return fmt.Errorf("links[%d]: %w", k, err)
		}
	}
	return nil
}

func (o *OracleSpec) check() error {
	switch {
	case o.Depth < 0 || o.Depth > 2:
		return fmt.Errorf("depth = %d, want 1 or 2", o.Depth)
	case o.MaxRanks2 < 0:
		return fmt.Errorf("max_ranks2 = %d, want >= 0", o.MaxRanks2)
	case o.Beam < -1:
		return fmt.Errorf("beam = %d, want >= 1, or -1 for all", o.Beam)
	case o.Budget < 0:
		return fmt.Errorf("budget = %d, want >= 1", o.Budget)
	case o.Screen < 0:
		return fmt.Errorf("screen = %d epochs, want >= 1", o.Screen)
	case o.Refine < 0:
		return fmt.Errorf("refine = %d, want >= 1", o.Refine)
	case o.Restarts != nil && *o.Restarts < 0:
		return fmt.Errorf("restarts = %d, want >= 0 (climbs after the first)", *o.Restarts)
	case o.ClimbBudget < 0:
		return fmt.Errorf("climb_budget = %d simulations, want >= 1", o.ClimbBudget)
	case o.ClimbScreen < 0:
		return fmt.Errorf("climb_screen = %d epochs, want >= 1", o.ClimbScreen)
	case !o.Climb && (o.Restarts != nil || o.ClimbBudget != 0 || o.ClimbScreen != 0):
		return fmt.Errorf("restarts, climb_budget and climb_screen shape the climbing oracle; set climb: true")
	}
	switch o.Objective {
	case "", "mean", "p95":
	default:
		return fmt.Errorf("objective %q, want mean or p95", o.Objective)
	}
	return nil
}

func (t TunerSpec) check() error {
	_, err := t.config(0)
	return err
}

// reservedNames are the columns every table has; a compared run may not
// take one.
var reservedNames = []string{"baseline", "react", "oracle", "climb"}

func (s *Scenario) checkCompare() error {
	seen := map[string]bool{}
	for i := range s.Compare {
		c := &s.Compare[i]
		name := strings.ToLower(c.Name)
		switch {
		case c.Name == "":
			return fmt.Errorf("compare[%d]: no name", i)
		case slices.Contains(reservedNames, name):
			return fmt.Errorf("compare[%d]: name %q is a column of every table (%s); choose another", i, c.Name, strings.Join(reservedNames, ", "))
		case seen[name]:
			return fmt.Errorf("compare[%d]: name %q used twice", i, c.Name)
		}
		seen[name] = true
		for k := range s.Variants {
			if strings.ToLower(s.Variants[k].Name) == name {
				return fmt.Errorf("compare[%d]: name %q is also variants[%d]'s", i, c.Name, k)
			}
		}
		t := c.Tuner.over(s.Tuner)
		if err := t.check(); err != nil {
			return fmt.Errorf("compare[%d] (%s): tuner: %w", i, c.Name, err)
		}
	}
	return nil
}
