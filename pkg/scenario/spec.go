package scenario

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

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
	// GPUsPerHost is the GPUs of every host (default 1); with more, jobs
	// are hierarchical and their ranks are hosts (see hosts.go). NIC is
	// "host" (default: the GPUs share the host's NIC) or "gpu" (one NIC a
	// GPU, each on its own copy of the host's cables; external flows use
	// NIC 0). IntraCapacity is a GPU's intra-host bandwidth, bits/s
	// (default DefaultIntraCapacity).
	GPUsPerHost   int     `json:"gpus_per_host,omitempty"`
	NIC           string  `json:"nic,omitempty"`
	IntraCapacity float64 `json:"intra_capacity,omitempty"`
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
//
// FromEpoch and ToEpoch make the congestion start and stop: the flows
// exist only while Job runs its epochs FromEpoch..ToEpoch-1 (default: from
// epoch 0, to the end), counted in the job's own epochs so that "congestion
// from epoch 30" means the same whatever the pattern's speed.
type ExternalSpec struct {
	P         int        `json:"p"`
	Pairs     []HostPair `json:"pairs,omitempty"`
	Random    int        `json:"random,omitempty"`
	Job       int        `json:"job,omitempty"`
	Direction string     `json:"direction,omitempty"`
	Ranks     []int      `json:"ranks,omitempty"`
	FromEpoch int        `json:"from_epoch,omitempty"`
	ToEpoch   *int       `json:"to_epoch,omitempty"` // exclusive
}

// windowed says whether the flows come and go.
func (e *ExternalSpec) windowed() bool { return e.FromEpoch > 0 || e.ToEpoch != nil }

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

// TunerSpec sets tuner settings for every tuned job, by tuner.Config's JSON
// names ({"Model": "paper", "B": 8}); the others keep tuner.DefaultConfig's,
// except Seed, which by default each job draws from the case's seed.
type TunerSpec map[string]json.RawMessage

// over returns t with the settings it leaves unset taken from base.
func (t TunerSpec) over(base TunerSpec) TunerSpec {
	o := maps.Clone(base)
	if o == nil {
		o = TunerSpec{}
	}
	maps.Copy(o, t)
	return o
}

// CompareSpec is one more REACT run of every case, beside the main one,
// with other tuner settings (Tuner overrides the scenario's tuner block),
// so that a table shows two tuners side by side on the same congestion,
// the same port draws and the same measurement noise: for example the
// paper's algorithm, {"name": "paper", "tuner": {"Model": "paper"}}. The
// tuners' seeds are drawn as the main run's are.
type CompareSpec struct {
	Name  string    `json:"name"`
	Tuner TunerSpec `json:"tuner"`
}

// OracleSpec bounds the oracle's exhaustive search. It tries every valid
// transform of the tuner's three kinds on each tuned job's pattern (depth
// 1), then, for jobs of at most MaxRanks2 ranks, every transform of the
// Beam best of those (depth 2), until Budget simulations per job.
//
// Climb adds a second oracle, a hill climb with the simulator as judge:
// from the initial pattern it moves to the best of every valid transform,
// again and again until none improves, and climbs again from the Restarts
// next-best first moves (default 2), until ClimbBudget new simulations per
// job (default 1500; patterns the depth search judged cost nothing, a
// screened simulation counts as one). Many
// transforms away it finds what two cannot; tables show both oracles and
// measure REACT's share against the better one.
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

	Climb       bool `json:"climb,omitempty"`
	Restarts    *int `json:"restarts,omitempty"`
	ClimbBudget int  `json:"climb_budget,omitempty"`
	// ClimbScreen, when set, judges the climb's candidates on their first
	// ClimbScreen epochs (default: as the depth search, Screen); the
	// Refine best it saw and the top of every climb then run the whole
	// case, and the whole runs decide.
	ClimbScreen int `json:"climb_screen,omitempty"`
}

// VariantSpec is an extra static run: the baseline without external flows
// or without failures, with transforms applied by hand, or flat (one
// pattern of the job's algorithm over all its GPUs, rank r on host r/L,
// instead of the hierarchical one over its hosts).
type VariantSpec struct {
	Name       string     `json:"name"`
	NoExternal bool       `json:"no_external,omitempty"`
	NoFailures bool       `json:"no_failures,omitempty"`
	Swaps      []SwapSpec `json:"swaps,omitempty"`
	Flat       bool       `json:"flat,omitempty"`
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

// pattern is the job's initial pattern over its ranks (hosts, with
// several GPUs a host).
func (j *JobSpec) pattern() (*ten.Pattern, error) { return j.patternOn(1) }

// patternOn is the job's pattern over gpus GPUs of each of its hosts, the
// root on GPU 0 of the root host.
func (j *JobSpec) patternOn(gpus int) (*ten.Pattern, error) {
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
			root = *j.Root * gpus
		}
	} else if j.Root != nil && *j.Root != -1 {
		return nil, fmt.Errorf("%v has no root, got root %d", op, *j.Root)
	}
	return pattern.Generate(op, algo, j.Ranks*gpus, root)
}

func (j *JobSpec) react() bool { return j.React == nil || *j.React }

func (j *JobSpec) ports() int {
	if j.Ports == 0 {
		return DefaultPorts
	}
	return j.Ports
}

func (o OracleSpec) depth() int     { return cmpOr(o.Depth, 2) }
func (o OracleSpec) maxRanks2() int { return cmpOr(o.MaxRanks2, 8) }
func (o OracleSpec) beam() int      { return cmpOr(o.Beam, 4) }
func (o OracleSpec) budget() int    { return cmpOr(o.Budget, 2000) }
func (o OracleSpec) refine() int    { return cmpOr(o.Refine, 8) }
func (o OracleSpec) climbBudget() int {
	return cmpOr(o.ClimbBudget, 1500)
}

func (o OracleSpec) restarts() int {
	if o.Restarts == nil {
		return 2
	}
	return *o.Restarts
}

// screen is the number of first epochs the depth search judges its
// candidates on, out of a case's epochs; 0 for whole runs.
func (o OracleSpec) screen(epochs int) int {
	if o.Screen > 0 && o.Screen < epochs {
		return o.Screen
	}
	return 0
}

// climbScreen is screen for the climb: ClimbScreen, or the depth search's.
func (o OracleSpec) climbScreen(epochs int) int {
	if o.ClimbScreen > 0 {
		if o.ClimbScreen < epochs {
			return o.ClimbScreen
		}
		return 0
	}
	return o.screen(epochs)
}

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
