// Package scenario describes the paper's simulation experiments (§4.3,
// §7.3, Appendix C) as data and runs them: a topology, jobs with their
// collective pattern and placement, external flows, partial link failures,
// and optionally a sweep over parameters and seeds. For every case it runs
// the static pattern (baseline), REACT (the tuner in the loop, with the
// runtime's lag) and an oracle (the best pattern one or two transforms away,
// judged by the simulator itself), and returns every figure.
//
// It is the only package that joins the simulator (netsim) and the tuner,
// the way the runtime joins the tuner and the network. It does no I/O:
// Decode takes a callback for the topology files a scenario names.
//
// # Seeds
//
// A case is a cell of the sweep (one value per axis) and a seed. Everything
// random in a case (placements, external pairs, failed links, ECMP hash
// seeds, port choices, the tuner's tie-breaks) is drawn from its seed
// alone, each from its own stream, so the same seed gives the same
// placement and the same congested pairs in every cell: a sweep over p
// varies the congestion degree of one set of random scenarios. The random
// pairs of a case with x pairs are the first x of the case with more.
package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// Format is the value of a scenario file's "format" field.
const Format = "react.scenario/v1"

// Defaults of the paper's §7.3 setting.
const (
	DefaultCapacity = 100e9 // bits/s
	DefaultLatency  = 1e-6  // s per link
	DefaultPorts    = 4
)

// Scenario is one experiment, as its JSON file spells it.
type Scenario struct {
	Format      string `json:"format"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Figure names the paper's figure or claim the scenario reproduces.
	Figure   string       `json:"figure,omitempty"`
	Topology TopologySpec `json:"topology"`
	Epochs   int          `json:"epochs"`
	// MeasureAfter is the number of warm-up epochs left out of every
	// statistic: epochs MeasureAfter..Epochs-1 are measured.
	MeasureAfter int            `json:"measure_after"`
	Seed         uint64         `json:"seed"`
	Jobs         []JobSpec      `json:"jobs"`
	External     []ExternalSpec `json:"external,omitempty"`
	Failures     []FailureSpec  `json:"failures,omitempty"`
	Tuner        TunerSpec      `json:"tuner,omitzero"`
	Oracle       OracleSpec     `json:"oracle,omitzero"`
	// Variants are extra static runs beside the baseline (no congestion, a
	// transform applied by hand).
	Variants []VariantSpec `json:"variants,omitempty"`
	Sweep    *SweepSpec    `json:"sweep,omitempty"`

	net   *topo.Topology
	cells []*cell
}

// TopologySpec is the network. Kinds: "star" (Hosts hosts on one switch),
// "fattree" (k-ary, K), "clos" (ToRs x HostsPerToR hosts, every ToR wired
// to every one of Aggs aggregation switches), "json" (topo's JSON form,
// read from File), "alibaba_csv" (the Alibaba trace's host, ToR and
// aggregation rows, read from File; every ToR is wired to every
// aggregation switch, the core is left out; HostsPerToR, when set, keeps at
// most that many hosts of each ToR, in file order).
type TopologySpec struct {
	Kind        string  `json:"kind"`
	Hosts       int     `json:"hosts,omitempty"`
	K           int     `json:"k,omitempty"`
	ToRs        int     `json:"tors,omitempty"`
	Aggs        int     `json:"aggs,omitempty"`
	HostsPerToR int     `json:"hosts_per_tor,omitempty"`
	File        string  `json:"file,omitempty"`
	Capacity    float64 `json:"capacity,omitempty"` // bits/s; default 100e9
	// Latency per link in seconds; default 1e-6. A pointer, so that 0 can
	// be asked for.
	Latency *float64 `json:"latency,omitempty"`
	// ECMPSeed fixes the switches' hash seed; by default each case draws
	// its own.
	ECMPSeed *uint64 `json:"ecmp_seed,omitempty"`
}

// JobSpec is one collective job.
type JobSpec struct {
	Name  string  `json:"name"`
	Op    string  `json:"op"`
	Algo  string  `json:"algo,omitempty"` // default: the op's first (pattern.Algos)
	Ranks int     `json:"ranks"`
	Root  *int    `json:"root,omitempty"` // broadcast and reduce; default 0
	Bytes float64 `json:"bytes"`          // message size, bytes (MB = 10^6)
	Ports int     `json:"ports,omitempty"`
	Gap   float64 `json:"gap,omitempty"` // idle seconds between epochs
	// React says whether REACT tunes this job (default true).
	React     *bool         `json:"react,omitempty"`
	Placement PlacementSpec `json:"placement,omitzero"`
}

// PlacementSpec puts a job's ranks on hosts; rank r runs on the r-th host
// chosen. Kinds: "first" (default: hosts Offset.. of the pool, in order),
// "hosts" (Hosts, explicitly), "spread" (evenly spaced over the pool,
// starting at Offset), "random" (distinct random hosts of the pool, in
// random order; Disjoint avoids the hosts of earlier jobs), "overlap"
// (Shared random hosts of job With, the others random hosts of the pool
// that no earlier job uses, in random rank order). Pool is an inclusive
// host range [lo, hi]; default every host.
type PlacementSpec struct {
	Kind     string `json:"kind,omitempty"`
	Hosts    []int  `json:"hosts,omitempty"`
	Offset   int    `json:"offset,omitempty"`
	Pool     []int  `json:"pool,omitempty"`
	Disjoint bool   `json:"disjoint,omitempty"`
	With     int    `json:"with,omitempty"`
	Shared   int    `json:"shared,omitempty"`
}

// ExternalSpec adds P long-running flows per source-destination pair:
// the pairs given, and Random pairs drawn as the paper does (§7.3.1): with
// Direction "out" (default) the sources are distinct ranks of Job (Ranks,
// when given, limits them) and the destinations random hosts outside every
// job; with "in" the other way round, into the job's ranks.
type ExternalSpec struct {
	P         int        `json:"p"`
	Pairs     []HostPair `json:"pairs,omitempty"`
	Random    int        `json:"random,omitempty"`
	Job       int        `json:"job,omitempty"`
	Direction string     `json:"direction,omitempty"`
	Ranks     []int      `json:"ranks,omitempty"`
}

// HostPair is a source and a destination host.
type HostPair struct {
	Src int `json:"src"`
	Dst int `json:"dst"`
}

// FailureSpec cuts cables (both directions) to Capacity: those named in
// Links and Random more drawn from Scope: "any" (default, every cable),
// "fabric" (switch to switch only) or "job" (cables on a shortest path
// between two ranks of Job, so that the failure can matter to it).
type FailureSpec struct {
	Links    []LinkRef `json:"links,omitempty"`
	Random   int       `json:"random,omitempty"`
	Scope    string    `json:"scope,omitempty"`
	Job      int       `json:"job,omitempty"`
	Capacity float64   `json:"capacity"`
}

// LinkRef names a cable by its end nodes (topology names, e.g. "h3",
// "edge0.1", "tor7").
type LinkRef struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// TunerSpec overrides fields of tuner.DefaultConfig for every tuned job.
type TunerSpec struct {
	B        *int     `json:"B,omitempty"`
	Delta1   *float64 `json:"delta1,omitempty"`
	Delta2   *float64 `json:"delta2,omitempty"`
	Kt       *int     `json:"kt,omitempty"`
	KtGrowth *int     `json:"kt_growth,omitempty"`
	Epsilon  *float64 `json:"epsilon,omitempty"`
	H        *int     `json:"H,omitempty"`
	EMax     *int     `json:"emax,omitempty"`
	AMax     *int     `json:"amax,omitempty"`
	TauR     *float64 `json:"taur,omitempty"`
	Lag      *int     `json:"lag,omitempty"`
	// Seed fixes the tuners' seed; by default it is drawn from the case's.
	Seed *uint64 `json:"seed,omitempty"`
}

// OracleSpec bounds the oracle's exhaustive search. It tries every valid
// transform of the tuner's three kinds on each tuned job's pattern (depth
// 1), then, for jobs of at most MaxRanks2 ranks, every transform of the
// Beam best of those (depth 2), until Budget simulations per job.
type OracleSpec struct {
	Off       bool `json:"off,omitempty"`
	Depth     int  `json:"depth,omitempty"`      // 1 or 2; default 2
	MaxRanks2 int  `json:"max_ranks2,omitempty"` // default 8
	Beam      int  `json:"beam,omitempty"`       // default 4; -1: all
	Budget    int  `json:"budget,omitempty"`     // default 2000
	// Objective: "mean" (default: mean algorithm bandwidth) or "p95" (the
	// bandwidth of the p95 collective time).
	Objective string `json:"objective,omitempty"`
	// Screen, when set, runs every candidate for only its first Screen
	// epochs; the Refine (default 8) best then run the whole case, and the
	// whole runs decide. It cuts the cost where one run is dear (the Clos).
	Screen int `json:"screen,omitempty"`
	Refine int `json:"refine,omitempty"`
}

// VariantSpec is an extra static run: the baseline without external flows
// or without failures, or with transforms applied by hand.
type VariantSpec struct {
	Name       string     `json:"name"`
	NoExternal bool       `json:"no_external,omitempty"`
	NoFailures bool       `json:"no_failures,omitempty"`
	Swaps      []SwapSpec `json:"swaps,omitempty"`
}

// SwapSpec is one transform by hand: "global" (ranks X and Y everywhere),
// "chunk" (X and Y in Chunk) or "position" (vertices A and B of Chunk,
// each [step, rank]).
type SwapSpec struct {
	Job   int    `json:"job,omitempty"`
	Kind  string `json:"kind"`
	Chunk int    `json:"chunk,omitempty"`
	X     int    `json:"x,omitempty"`
	Y     int    `json:"y,omitempty"`
	A     []int  `json:"a,omitempty"`
	B     []int  `json:"b,omitempty"`
}

// SweepSpec runs every combination of the axes' values (the first axis
// outermost), Seeds cases each, with seeds Seed, Seed+1, ...
type SweepSpec struct {
	Seeds int    `json:"seeds,omitempty"` // default 1
	Axes  []Axis `json:"axes,omitempty"`
}

// Axis is one swept parameter. Params: "pairs" (Random of every external
// spec without explicit pairs), "p" (P of every external spec), "ports",
// "bytes" and "ranks" (every job), "collective" ("op/algo", every job),
// "overlap" (Shared of every overlap placement), "failures" (Random of
// every failure spec), "capacity" (Capacity of every failure spec),
// "react_jobs" (the first n jobs run REACT, the others stay static).
type Axis struct {
	Param  string  `json:"param"`
	Values []Value `json:"values"`
}

// Value is an axis value: a number or a string.
type Value struct {
	Num   float64
	Str   string
	IsStr bool
}

// UnmarshalJSON reads a number or a string.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		v.IsStr = true
		return json.Unmarshal(b, &v.Str)
	}
	v.IsStr = false
	if err := json.Unmarshal(b, &v.Num); err != nil {
		return fmt.Errorf("axis value %s: want a number or a string", b)
	}
	return nil
}

// MarshalJSON writes the number or the string.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.IsStr {
		return json.Marshal(v.Str)
	}
	return json.Marshal(v.Num)
}

func (v Value) String() string {
	if v.IsStr {
		return v.Str
	}
	return strconv.FormatFloat(v.Num, 'g', -1, 64)
}

// Param is an axis and the value a cell gives it.
type Param struct {
	Param string `json:"param"`
	Value Value  `json:"value"`
}

// Decode reads a scenario file and checks every cell of its sweep. read
// returns the contents of a file the topology names (paths as written in
// the scenario); it may be nil when the scenario names none.
func Decode(data []byte, read func(name string) ([]byte, error)) (*Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scenario: %s", jsonError(data, dec, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("scenario: %s: data after the scenario object", position(data, dec.InputOffset()))
	}
	if err := s.prepare(read); err != nil {
		if s.Name != "" {
			return nil, fmt.Errorf("scenario %q: %w", s.Name, err)
		}
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return &s, nil
}

// jsonError adds the line and column to a decoding error.
func jsonError(data []byte, dec *json.Decoder, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%s: %v", position(data, syn.Offset), err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "value"
		}
		return fmt.Sprintf("%s: %s: got a JSON %s, want %v", position(data, typ.Offset), field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return "empty input, want a JSON object"
	}
	return fmt.Sprintf("%s: %v", position(data, dec.InputOffset()), strings.TrimPrefix(err.Error(), "json: "))
}

func position(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}

// cell is one combination of axis values, with the scenario those values
// give and its jobs' initial patterns.
type cell struct {
	params   []Param
	sc       *Scenario
	patterns []*ten.Pattern
	variants [][]*ten.Pattern
}

func (s *Scenario) prepare(read func(string) ([]byte, error)) error {
	if s.Format != Format {
		return fmt.Errorf("format %q, want %q", s.Format, Format)
	}
	if s.Name == "" {
		return errors.New("no name")
	}
	if s.Epochs < 1 {
		return fmt.Errorf("epochs = %d, want >= 1", s.Epochs)
	}
	if s.MeasureAfter < 0 || s.MeasureAfter >= s.Epochs {
		return fmt.Errorf("measure_after = %d, want in [0, epochs = %d)", s.MeasureAfter, s.Epochs)
	}
	if len(s.Jobs) == 0 {
		return errors.New("no jobs")
	}
	net, err := buildTopology(&s.Topology, read)
	if err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	s.net = net
	if err := s.Oracle.check(); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	if err := s.Tuner.check(); err != nil {
		return fmt.Errorf("tuner: %w", err)
	}
	sw := s.Sweep
	if sw == nil {
		sw = &SweepSpec{}
	}
	if sw.Seeds < 0 {
		return fmt.Errorf("sweep: seeds = %d, want >= 1", sw.Seeds)
	}
	combos := [][]Param{nil}
	seen := map[string]bool{}
	for i, ax := range sw.Axes {
		if !knownParam(ax.Param) {
			return fmt.Errorf("sweep: axes[%d]: unknown param %q (want one of %s)", i, ax.Param, strings.Join(paramNames(), ", "))
		}
		if seen[ax.Param] {
			return fmt.Errorf("sweep: axes[%d]: param %q swept twice", i, ax.Param)
		}
		seen[ax.Param] = true
		if len(ax.Values) == 0 {
			return fmt.Errorf("sweep: axes[%d] (%s): no values", i, ax.Param)
		}
		var next [][]Param
		for _, c := range combos {
			for _, v := range ax.Values {
				next = append(next, append(append([]Param(nil), c...), Param{ax.Param, v}))
			}
		}
		combos = next
	}
	if len(combos) > maxCells {
		return fmt.Errorf("sweep: %d cells, at most %d", len(combos), maxCells)
	}
	flows := 0
	for _, ps := range combos {
		c := &cell{params: ps, sc: s.clone()}
		for _, p := range ps {
			if err := c.sc.apply(p); err != nil {
				return fmt.Errorf("sweep: %s = %v: %w", p.Param, p.Value, err)
			}
		}
		if err := c.sc.check(); err != nil {
			if len(ps) > 0 {
				return fmt.Errorf("cell %s: %w", cellName(ps), err)
			}
			return err
		}
		for i := range c.sc.Jobs {
			p, err := c.sc.Jobs[i].pattern()
			if err != nil {
				return fmt.Errorf("jobs[%d] (%s): %w", i, c.sc.Jobs[i].Name, err)
			}
			c.patterns = append(c.patterns, p)
			if flows += len(p.Flows); flows > maxFlows {
				return fmt.Errorf("the jobs of all cells have more than %d flows; simulate fewer or smaller jobs", maxFlows)
			}
		}
		for k := range c.sc.Variants {
			v := &c.sc.Variants[k]
			pats, err := variantPatterns(v, c.patterns)
			if err != nil {
				return fmt.Errorf("variants[%d] (%s): %w", k, v.Name, err)
			}
			c.variants = append(c.variants, pats)
		}
		s.cells = append(s.cells, c)
	}
	return nil
}

// Bounds that keep a typo from exhausting memory: a 720-rank ring has
// about a million flows.
const (
	maxCells = 10000
	maxFlows = 1 << 24
)

func cellName(ps []Param) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%v", p.Param, p.Value)
	}
	return b.String()
}

// clone copies the parts apply changes.
func (s *Scenario) clone() *Scenario {
	c := *s
	c.Jobs = append([]JobSpec(nil), s.Jobs...)
	c.External = append([]ExternalSpec(nil), s.External...)
	c.Failures = append([]FailureSpec(nil), s.Failures...)
	c.cells = nil
	c.Sweep = nil
	return &c
}

func paramNames() []string {
	return []string{"pairs", "p", "ports", "bytes", "ranks", "collective", "overlap", "failures", "capacity", "react_jobs"}
}

func knownParam(p string) bool {
	for _, q := range paramNames() {
		if p == q {
			return true
		}
	}
	return false
}

func (v Value) count(what string) (int, error) {
	if v.IsStr || v.Num != math.Trunc(v.Num) || v.Num < 0 || v.Num > 1<<30 {
		return 0, fmt.Errorf("%s must be a whole number >= 0, got %v", what, v)
	}
	return int(v.Num), nil
}

func (s *Scenario) apply(p Param) error {
	v := p.Value
	switch p.Param {
	case "pairs":
		n, err := v.count("pairs")
		if err != nil {
			return err
		}
		hit := false
		for i := range s.External {
			if len(s.External[i].Pairs) == 0 {
				s.External[i].Random, hit = n, true
			}
		}
		if !hit {
			return errors.New("no external spec without explicit pairs to set")
		}
	case "p":
		n, err := v.count("p")
		if err != nil {
			return err
		}
		if len(s.External) == 0 {
			return errors.New("no external spec to set")
		}
		for i := range s.External {
			s.External[i].P = n
		}
	case "ports", "ranks":
		n, err := v.count(p.Param)
		if err != nil {
			return err
		}
		for i := range s.Jobs {
			if p.Param == "ports" {
				s.Jobs[i].Ports = n
			} else {
				s.Jobs[i].Ranks = n
			}
		}
	case "bytes":
		if v.IsStr || !(v.Num > 0) {
			return fmt.Errorf("bytes must be a number > 0, got %v", v)
		}
		for i := range s.Jobs {
			s.Jobs[i].Bytes = v.Num
		}
	case "collective":
		op, algo, ok := strings.Cut(v.Str, "/")
		if !v.IsStr || !ok {
			return fmt.Errorf(`collective must be a string "op/algo", got %v`, v)
		}
		for i := range s.Jobs {
			s.Jobs[i].Op, s.Jobs[i].Algo = op, algo
		}
	case "overlap":
		n, err := v.count("overlap")
		if err != nil {
			return err
		}
		hit := false
		for i := range s.Jobs {
			if s.Jobs[i].Placement.Kind == "overlap" {
				s.Jobs[i].Placement.Shared, hit = n, true
			}
		}
		if !hit {
			return errors.New(`no job with an "overlap" placement to set`)
		}
	case "failures":
		n, err := v.count("failures")
		if err != nil {
			return err
		}
		if len(s.Failures) == 0 {
			return errors.New("no failure spec to set")
		}
		for i := range s.Failures {
			s.Failures[i].Random = n
		}
	case "capacity":
		if v.IsStr || !(v.Num > 0) {
			return fmt.Errorf("capacity must be a number > 0, got %v", v)
		}
		if len(s.Failures) == 0 {
			return errors.New("no failure spec to set")
		}
		for i := range s.Failures {
			s.Failures[i].Capacity = v.Num
		}
	case "react_jobs":
		n, err := v.count("react_jobs")
		if err != nil {
			return err
		}
		if n > len(s.Jobs) {
			return fmt.Errorf("react_jobs = %d, but there are %d jobs", n, len(s.Jobs))
		}
		for i := range s.Jobs {
			on := i < n
			s.Jobs[i].React = &on
		}
	default:
		return fmt.Errorf("unknown param %q", p.Param)
	}
	return nil
}

// check validates one cell's scenario as far as it can without drawing
// anything random.
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
		if !v.NoExternal && !v.NoFailures && len(v.Swaps) == 0 {
			return fmt.Errorf("variants[%d] (%s): changes nothing (give no_external, no_failures or swaps)", i, v.Name)
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

func (j *JobSpec) pattern() (*ten.Pattern, error) {
	op, err := ten.ParseOp(j.Op)
	if err != nil {
		return nil, err
	}
	algo := j.Algo
	if algo == "" {
		algo = pattern.Algos(op)[0]
	}
	root := -1
	if op.Rooted() {
		root = 0
		if j.Root != nil {
			root = *j.Root
		}
	} else if j.Root != nil && *j.Root != -1 {
		return nil, fmt.Errorf("%v has no root, got root %d", op, *j.Root)
	}
	return pattern.Generate(op, algo, j.Ranks, root)
}

func (j *JobSpec) react() bool { return j.React == nil || *j.React }

func (j *JobSpec) ports() int {
	if j.Ports == 0 {
		return DefaultPorts
	}
	return j.Ports
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
	}
	switch o.Objective {
	case "", "mean", "p95":
	default:
		return fmt.Errorf("objective %q, want mean or p95", o.Objective)
	}
	return nil
}

func (o OracleSpec) depth() int     { return cmpOr(o.Depth, 2) }
func (o OracleSpec) maxRanks2() int { return cmpOr(o.MaxRanks2, 8) }
func (o OracleSpec) beam() int      { return cmpOr(o.Beam, 4) }
func (o OracleSpec) budget() int    { return cmpOr(o.Budget, 2000) }
func (o OracleSpec) refine() int    { return cmpOr(o.Refine, 8) }

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func (t *TunerSpec) check() error {
	cfg := t.config(0)
	if err := cfg.Validate(); err != nil {
		return err
	}
	return nil
}
