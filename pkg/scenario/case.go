package scenario

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
	"github.com/react-torch/react-torch/pkg/tuner"
)

// Case is one run of a scenario: a cell of its sweep and a seed.
type Case struct {
	Cell int    `json:"cell"`
	Seed uint64 `json:"seed"`
}

// Cells lists the cells of the sweep, each as the values it gives the axes
// (one cell with no params when there is no sweep).
func (s *Scenario) Cells() [][]Param {
	out := make([][]Param, len(s.cells))
	for i, c := range s.cells {
		out[i] = slices.Clone(c.params)
	}
	return out
}

// Seeds lists the seeds every cell runs.
func (s *Scenario) Seeds() []uint64 {
	n := 1
	if s.Sweep != nil && s.Sweep.Seeds > 0 {
		n = s.Sweep.Seeds
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = s.Seed + uint64(i)
	}
	return out
}

// Cases lists every case, cell by cell, seed by seed; Summarize expects
// runs in this order.
func (s *Scenario) Cases() []Case {
	var out []Case
	for c := range s.cells {
		for _, seed := range s.Seeds() {
			out = append(out, Case{c, seed})
		}
	}
	return out
}

// WithSeed returns the scenario with another first seed.
func (s *Scenario) WithSeed(seed uint64) *Scenario {
	c := *s
	c.Seed = seed
	return &c
}

// WithSeeds returns the scenario with n seeds a cell: a quicker run of a
// file whose own count takes long.
func (s *Scenario) WithSeeds(n int) *Scenario {
	c := *s
	sw := SweepSpec{}
	if s.Sweep != nil {
		sw = *s.Sweep
	}
	sw.Seeds = n
	c.Sweep = &sw
	return &c
}

// WithoutOracle returns the scenario with the oracle off: REACT and the
// compared tuners against the static baseline only, which many seeds
// can afford (the oracle's search is most of a run's time).
func (s *Scenario) WithoutOracle() *Scenario {
	c := *s
	c.Oracle = OracleSpec{Off: true}
	c.cells = make([]*cell, len(s.cells))
	for i, cl := range s.cells {
		cc, sc := *cl, *cl.sc
		sc.Oracle = c.Oracle
		cc.sc = &sc
		c.cells[i] = &cc
	}
	return &c
}

// Network is the scenario's network (without a case's ECMP seed).
func (s *Scenario) Network() *topo.Topology { return s.net }

// Random streams of a case, one per purpose, so that drawing more of one
// (more pairs) does not move another (placements).
const (
	streamPlace = iota + 1
	streamExternal
	streamFailure
	streamECMP
	streamSim
	streamTuner
	streamNoise
)

func caseRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream*0x9e3779b97f4a7c15))
}

// External is one resolved source-destination pair of external flows;
// with a window, they exist only while Job runs epochs FromEpoch to
// ToEpoch-1 (ToEpoch 0: to the end).
type External struct {
	Src       int  `json:"src"`
	Dst       int  `json:"dst"`
	P         int  `json:"p"`
	Windowed  bool `json:"windowed,omitempty"`
	Job       int  `json:"job,omitempty"`
	FromEpoch int  `json:"from_epoch,omitempty"`
	ToEpoch   int  `json:"to_epoch,omitempty"`
}

// Cut is one partially failed link.
type Cut struct {
	Link     int     `json:"link"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	Capacity float64 `json:"capacity"`
}

// instance is a case with everything random drawn.
type instance struct {
	sc       *Scenario
	seed     uint64
	net      *topo.Topology // hosts as the scenario numbers them
	simNet   *topo.Topology // what the simulator runs on (with the GPUs' NICs)
	hosts    [][]int
	ext      []External
	cuts     []Cut
	patterns []*ten.Pattern
	jobs     []netsim.Job
	simSeed  uint64
	l1       map[int][]move // the oracle's first level, per job
	// scores remembers the oracles' judgements, so that the climb does
	// not simulate again what the depth search did.
	scores map[judgeKey]float64
}

func (s *Scenario) instance(c Case) (*instance, error) {
	if c.Cell < 0 || c.Cell >= len(s.cells) {
		return nil, fmt.Errorf("scenario %q: cell %d out of range [0, %d)", s.Name, c.Cell, len(s.cells))
	}
	cl := s.cells[c.Cell]
	sc := cl.sc
	in := &instance{sc: sc, seed: c.Seed, net: s.net, simNet: s.simNet, patterns: cl.patterns, simSeed: caseRand(c.Seed, streamSim).Uint64()}
	if s.Topology.ECMPSeed == nil {
		ecmp := caseRand(c.Seed, streamECMP).Uint64()
		in.net, in.simNet = s.net.WithSeed(ecmp), s.simNet.WithSeed(ecmp)
	}
	if err := in.place(); err != nil {
		return nil, err
	}
	if err := in.external(); err != nil {
		return nil, err
	}
	if err := in.failures(); err != nil {
		return nil, err
	}
	for i := range sc.Jobs {
		in.jobs = append(in.jobs, in.netJob(i))
	}
	return in, nil
}

func (in *instance) place() error {
	rng := caseRand(in.seed, streamPlace)
	used := map[int]bool{}
	for i := range in.sc.Jobs {
		j := &in.sc.Jobs[i]
		pl := &j.Placement
		lo, hi, _ := pool(pl.Pool, in.net.Hosts())
		size := hi - lo + 1
		var hs []int
		switch pl.Kind {
		case "", "first":
			for r := 0; r < j.Ranks; r++ {
				hs = append(hs, lo+pl.Offset+r)
			}
		case "hosts":
			hs = slices.Clone(pl.Hosts)
		case "spread":
			for r := 0; r < j.Ranks; r++ {
				hs = append(hs, lo+(pl.Offset+r*size/j.Ranks)%size)
			}
		case "random":
			for _, k := range rng.Perm(size) {
				if h := lo + k; !pl.Disjoint || !used[h] {
					hs = append(hs, h)
				}
				if len(hs) == j.Ranks {
					break
				}
			}
		case "overlap":
			other := in.hosts[pl.With]
			for _, k := range rng.Perm(len(other))[:pl.Shared] {
				hs = append(hs, other[k])
			}
			for _, k := range rng.Perm(size) {
				if len(hs) == j.Ranks {
					break
				}
				if h := lo + k; !used[h] {
					hs = append(hs, h)
				}
			}
			rng.Shuffle(len(hs), func(a, b int) { hs[a], hs[b] = hs[b], hs[a] })
		}
		if len(hs) != j.Ranks {
			return fmt.Errorf("job %s: placement %s found %d free hosts for %d ranks", j.Name, pl.Kind, len(hs), j.Ranks)
		}
		seen := map[int]bool{}
		for r, h := range hs {
			if seen[h] {
				return fmt.Errorf("job %s: placement %s puts two ranks on host %d (rank %d); one rank a host", j.Name, pl.Kind, h, r)
			}
			seen[h] = true
			used[h] = true
		}
		in.hosts = append(in.hosts, hs)
	}
	return nil
}

func (in *instance) external() error {
	rng := caseRand(in.seed, streamExternal)
	inJob := map[int]bool{}
	for _, hs := range in.hosts {
		for _, h := range hs {
			inJob[h] = true
		}
	}
	for i := range in.sc.External {
		e := &in.sc.External[i]
		pair := func(src, dst int) External {
			x := External{Src: src, Dst: dst, P: e.P}
			if e.windowed() {
				x.Windowed, x.Job, x.FromEpoch = true, e.Job, e.FromEpoch
				if e.ToEpoch != nil {
					x.ToEpoch = *e.ToEpoch
				}
			}
			return x
		}
		for _, pr := range e.Pairs {
			in.ext = append(in.ext, pair(pr.Src, pr.Dst))
		}
		if e.Random == 0 {
			continue
		}
		job := in.hosts[e.Job]
		var side []int // the job's end of each pair
		if len(e.Ranks) > 0 {
			for _, r := range e.Ranks {
				side = append(side, job[r])
			}
		} else {
			side = job
		}
		// The other end: hosts of no job, or failing that of no other rank
		// of this job.
		var others []int
		for h := 0; h < in.net.Hosts(); h++ {
			if !inJob[h] {
				others = append(others, h)
			}
		}
		if len(others) == 0 {
			for h := 0; h < in.net.Hosts(); h++ {
				if !slices.Contains(job, h) {
					others = append(others, h)
				}
			}
		}
		if len(others) == 0 {
			return fmt.Errorf("external[%d]: no host outside job %s to pair with", i, in.sc.Jobs[e.Job].Name)
		}
		var perm []int
		for k := 0; k < e.Random; k++ {
			if k%len(side) == 0 {
				perm = rng.Perm(len(side))
			}
			a, b := side[perm[k%len(side)]], others[rng.IntN(len(others))]
			if e.Direction == "in" {
				a, b = b, a
			}
			in.ext = append(in.ext, pair(a, b))
		}
	}
	return nil
}

func (in *instance) failures() error {
	rng := caseRand(in.seed, streamFailure)
	cut := map[topo.LinkID]bool{}
	add := func(ids []topo.LinkID, capBps float64) {
		for _, id := range ids {
			if cut[id] {
				continue
			}
			cut[id] = true
			l := in.net.Link(id)
			in.cuts = append(in.cuts, Cut{int(id), in.net.Name(l.From), in.net.Name(l.To), capBps})
		}
	}
	for i := range in.sc.Failures {
		f := &in.sc.Failures[i]
		for _, l := range f.Links {
			ids, _ := findCable(in.net, l) // checked in Decode
			add(ids, f.Capacity)
		}
		if f.Random == 0 {
			continue
		}
		cands, err := in.cables(f)
		if err != nil {
			return fmt.Errorf("failures[%d]: %w", i, err)
		}
		var free []topo.LinkID
		for _, c := range cands {
			if !cut[c] {
				free = append(free, c)
			}
		}
		if f.Random > len(free) {
			return fmt.Errorf("failures[%d]: %d random cables asked for, %d in scope %q", i, f.Random, len(free), f.Scope)
		}
		for _, k := range rng.Perm(len(free))[:f.Random] {
			ids := []topo.LinkID{free[k]}
			l := in.net.Link(free[k])
			if back, ok := in.net.Find(l.To, l.From); ok {
				ids = append(ids, back)
			}
			add(ids, f.Capacity)
		}
	}
	return nil
}

// cables lists one link of every cable in the spec's scope (the one from
// the lower node, or the only one of a one-way link).
func (in *instance) cables(f *FailureSpec) ([]topo.LinkID, error) {
	net := in.net
	var onPath []bool
	if f.Scope == "job" {
		hs := in.hosts[f.Job]
		if n := len(hs) * len(hs) * net.NumLinks(); n > 1e8 {
			return nil, fmt.Errorf("scope job: %d ranks on %d links is too many to scan", len(hs), net.NumLinks())
		}
		onPath = make([]bool, net.NumLinks())
		for _, a := range hs {
			for _, b := range hs {
				if a == b {
					continue
				}
				d := net.Hops(a, b)
				for id := range onPath {
					l := net.Link(topo.LinkID(id))
					// Cables are two-way in every built topology, so the
					// hops from host a to node u are those from u to a.
					if (l.From == a || l.From >= net.Hosts()) && (l.To == b || l.To >= net.Hosts()) &&
						net.Hops(l.From, a)+1+net.Hops(l.To, b) == d {
						onPath[id] = true
					}
				}
			}
		}
	}
	var out []topo.LinkID
	for id := 0; id < net.NumLinks(); id++ {
		l := net.Link(topo.LinkID(id))
		back, two := net.Find(l.To, l.From)
		if two && l.From > l.To {
			continue
		}
		switch f.Scope {
		case "fabric":
			if l.From < net.Hosts() || l.To < net.Hosts() {
				continue
			}
		case "job":
			if !onPath[id] && !(two && onPath[back]) {
				continue
			}
		}
		out = append(out, topo.LinkID(id))
	}
	return out, nil
}

// newSim builds a simulator of the case, with or without its external
// flows and failures.
func (in *instance) newSim(external, failures bool) *netsim.Sim {
	s := netsim.New(in.simNet, in.simSeed)
	if external {
		for _, e := range in.ext {
			var err error
			if e.Windowed {
				err = s.AddExternalDuring(e.Src, e.Dst, e.P, netsim.Window{Job: e.Job, From: e.FromEpoch, To: e.ToEpoch})
			} else {
				err = s.AddExternal(e.Src, e.Dst, e.P)
			}
			if err != nil {
				panic(err) // hosts were drawn in range and distinct, windows checked in Decode
			}
		}
	}
	if failures {
		for _, c := range in.cuts {
			if err := s.SetCapacity(topo.LinkID(c.Link), c.Capacity); err != nil {
				panic(err)
			}
		}
	}
	return s
}

// config is the tuner's configuration for a job whose drawn seed is seed.
func (t TunerSpec) config(seed uint64) (tuner.Config, error) {
	c := tuner.DefaultConfig()
	c.Seed = seed
	if err := c.Override(t); err != nil {
		return c, err
	}
	return c, c.Validate()
}
