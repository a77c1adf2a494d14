// Package scenario describes the paper's simulation experiments (§4.3,
// §7.3, Appendix C) as data and runs them: a topology, jobs with their
// collective pattern and placement, external flows, partial link failures,
// and optionally a sweep over parameters and seeds. For every case it runs
// the static pattern (baseline), REACT (the tuner in the loop, with the
// runtime's lag, and again with each compared tuner setting) and oracles
// (the best pattern one or two transforms away, and optionally the top of a
// hill climb over transforms, both judged by the simulator itself), and
// returns every figure. Measurement noise, when asked for, touches only
// what the tuner sees.
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

import "github.com/react-torch/react-torch/pkg/topo"

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
	// Compare runs REACT again with other tuner settings.
	Compare []CompareSpec `json:"compare,omitempty"`
	// Noise is measurement noise on what the tuner sees.
	Noise  NoiseSpec  `json:"noise,omitzero"`
	Oracle OracleSpec `json:"oracle,omitzero"`
	// Variants are extra static runs beside the baseline (no congestion, a
	// transform applied by hand).
	Variants []VariantSpec `json:"variants,omitempty"`
	Sweep    *SweepSpec    `json:"sweep,omitempty"`
	// Packet scales the scenario down for the packet engine (ns-3).
	Packet *PacketSpec `json:"packet,omitempty"`

	net    *topo.Topology
	simNet *topo.Topology // net, with the GPUs' NICs when each has one
	cells  []*cell
}
