package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/react-torch/react-torch/internal/splitmix"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// The packet engine (react sim --engine ns3) runs a case in ns-3 through
// the C++ harness in ns3/: this file resolves the case exactly as the fluid
// engine does (placement, external pairs, failures, ECMP seed) into the
// harness's flat input and turns its output back into a Run. The scenario
// format stays Go's alone; the harness reads no scenario file.

// PacketSpec scales a scenario down for the packet engine, which costs
// seconds of wall time per simulated epoch on 2 cores where the fluid
// model costs microseconds. Applied by ForPacket, to the packet run and,
// when asked, to a fluid run that is to be compared with it.
type PacketSpec struct {
	// BytesScale multiplies every job's message size (and a swept
	// "bytes" axis); default 1.
	BytesScale float64 `json:"bytes_scale,omitempty"`
	// Epochs and MeasureAfter replace the scenario's, when set.
	Epochs       int `json:"epochs,omitempty"`
	MeasureAfter int `json:"measure_after,omitempty"`
	// Seeds replaces the sweep's seed count, when set.
	Seeds int `json:"seeds,omitempty"`
	// Axes replace the values of the sweep's axes of the same names.
	Axes []Axis `json:"axes,omitempty"`
}

// ForPacket returns the scenario as the packet engine runs it: scaled by
// its packet block, without oracles or compared tuner settings (each would
// be another packet run per candidate), and a sentence saying so.
func (s *Scenario) ForPacket(read func(string) ([]byte, error)) (*Scenario, string, error) {
	if s.Topology.gpus() > 1 {
		return nil, "", errors.New("packet engine: hosts of several GPUs (gpus_per_host > 1) are not supported")
	}
	if s.Noise.on() {
		return nil, "", errors.New("packet engine: measurement noise is not supported (packet-level times are noisy already)")
	}
	for i := range s.External {
		if s.External[i].windowed() {
			return nil, "", fmt.Errorf("packet engine: external[%d]: windowed external flows are not supported", i)
		}
	}
	c := *s
	c.Jobs = slices.Clone(s.Jobs)
	c.Oracle = OracleSpec{Off: true}
	c.Compare = nil
	var notes []string
	p := s.Packet
	if p == nil {
		p = &PacketSpec{}
	}
	scale := p.BytesScale
	if scale == 0 {
		scale = 1
	}
	if !(scale > 0) {
		return nil, "", fmt.Errorf("packet: bytes_scale = %v, want > 0", scale)
	}
	for i := range c.Jobs {
		c.Jobs[i].Bytes *= scale
	}
	if scale != 1 {
		notes = append(notes, fmt.Sprintf("message sizes x%g", scale))
	}
	if p.Epochs > 0 {
		c.Epochs = p.Epochs
		c.MeasureAfter = p.MeasureAfter
		notes = append(notes, fmt.Sprintf("epochs %d (measured after %d) instead of %d (after %d)", p.Epochs, p.MeasureAfter, s.Epochs, s.MeasureAfter))
	}
	if s.Sweep != nil {
		sw := *s.Sweep
		sw.Axes = slices.Clone(sw.Axes)
		for k := range sw.Axes {
			ax := &sw.Axes[k]
			for _, o := range p.Axes {
				if o.Param == ax.Param {
					ax.Values = o.Values
					notes = append(notes, fmt.Sprintf("%s in %v", ax.Param, valuesString(o.Values)))
				}
			}
			if ax.Param == "bytes" && scale != 1 {
				ax.Values = slices.Clone(ax.Values)
				for v := range ax.Values {
					ax.Values[v].Num *= scale
				}
			}
		}
		if p.Seeds > 0 {
			sw.Seeds = p.Seeds
			notes = append(notes, fmt.Sprintf("%d seeds", p.Seeds))
		}
		c.Sweep = &sw
	}
	c.Packet = nil
	c.cells = nil
	data, err := json.Marshal(&c)
	if err != nil {
		return nil, "", err
	}
	out, err := Decode(data, read)
	if err != nil {
		return nil, "", fmt.Errorf("packet scaling: %w", err)
	}
	note := "packet scaling: none"
	if len(notes) > 0 {
		note = "packet scaling: " + strings.Join(notes, "; ")
	}
	return out, note + "; no oracle, no compared tuners", nil
}

func valuesString(vs []Value) string {
	var parts []string
	for _, v := range vs {
		parts = append(parts, v.String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// PacketInput is the harness's flat input ("react.ns3-input/v1"), one
// per run of a case (baseline, REACT, each variant). docs/simulation.md
// documents every field.
type PacketInput struct {
	Format  string  `json:"format"`
	Run     string  `json:"run"`
	Scaling string  `json:"scaling"`
	Seed    uint64  `json:"seed"`
	Epochs  int     `json:"epochs"`
	Warmup  float64 `json:"warmup"`
	MaxSim  float64 `json:"max_sim_s"`
	// EpochTimeout fails the run when an epoch takes longer (simulated
	// seconds): a stalled connection, not a slow network.
	EpochTimeout float64          `json:"epoch_timeout_s"`
	TCP          PacketTCP        `json:"tcp"`
	Switch       PacketSwitch     `json:"switch"`
	Nodes        int              `json:"nodes"`
	Hosts        int              `json:"hosts"`
	Links        [][4]float64     `json:"links"` // from, to, bits/s, s
	Paths        [][]int          `json:"paths"` // node lists, host to host
	Jobs         []PacketJob      `json:"jobs"`
	External     []PacketExternal `json:"external"`
}

// PacketTCP is DCTCP's setting in the harness. Every segment is ACKed
// (DelAckCount 1): with ns-3's default of 2, a connection that carried one
// flow stalled on its next until the delayed-ACK timer fired. No SACK and
// no timestamps: the 32 MB buffers drop nothing, and each option costs
// time per packet.
type PacketTCP struct {
	Segment      int     `json:"segment"` // payload bytes: MTU less 40 bytes of headers
	Buffer       int     `json:"buffer"`  // socket send and receive buffers
	InitialCwnd  int     `json:"initial_cwnd"`
	DelAckCount  int     `json:"delack_count"`
	DelAckTimout float64 `json:"delack_timeout"`
	MinRTO       float64 `json:"min_rto"`
	SACK         bool    `json:"sack"`
	Timestamps   bool    `json:"timestamps"`
}

// PacketSwitch is every port's queue: RED marking ECN from RedMin to
// RedMax packets, BufferBytes deep, ACKs in a strict-priority band.
type PacketSwitch struct {
	RedMin      int     `json:"red_min"`
	RedMax      int     `json:"red_max"`
	BufferBytes float64 `json:"buffer_bytes"`
	AckPriority bool    `json:"ack_priority"`
	MTU         int     `json:"mtu"`
}

// PacketJob is a job: its hosts, its pattern (Flows, or the harness
// generates Op/Algo through libreact), and Routes, the path id of every
// (chunk, src rank, dst rank, port), -1 where src == dst: each flow uses
// one of its connection's Ports paths, drawn each epoch.
type PacketJob struct {
	Name   string       `json:"name"`
	Op     string       `json:"op"`
	Algo   string       `json:"algo"`
	Ranks  int          `json:"ranks"`
	Root   int          `json:"root"`
	Bytes  float64      `json:"bytes"`
	Hosts  []int        `json:"hosts"`
	Ports  int          `json:"ports"`
	Gap    float64      `json:"gap"`
	Tune   bool         `json:"tune"`
	Tuner  string       `json:"tuner,omitempty"` // react_tuner_create's config JSON
	Flows  [][6]float64 `json:"flows,omitempty"` // chunk, step, src, dst, kind, fraction
	Chunks int          `json:"chunks"`
	Routes []int        `json:"routes"`
}

// PacketExternal is one long-running external TCP flow on one path.
type PacketExternal struct {
	Src  int `json:"src"`
	Dst  int `json:"dst"`
	Path int `json:"path"`
}

// PacketOutput is the harness's output ("react.ns3-output/v1").
type PacketOutput struct {
	Format string  `json:"format"`
	SimS   float64 `json:"sim_s"`
	WallS  float64 `json:"wall_s"`
	// Packets dropped by queues and by IP over the whole run.
	QueueDrops int64             `json:"queue_drops"`
	IPDrops    int64             `json:"ip_drops"`
	Jobs       []PacketJobOutput `json:"jobs"`
}

// PacketJobOutput is one job's epochs and its tuner's decisions.
type PacketJobOutput struct {
	Name      string           `json:"name"`
	Epochs    []PacketEpoch    `json:"epochs"`
	Decisions []PacketDecision `json:"decisions"`
}

// PacketEpoch is one epoch of a job; times in seconds, flow times from
// the epoch's start in the pattern's flow order.
type PacketEpoch struct {
	Elapsed   float64   `json:"elapsed"`
	Reduce    float64   `json:"reduce"`
	NetBytes  float64   `json:"net_bytes"`
	Version   int64     `json:"version"`
	Start     float64   `json:"start"`
	FlowStart []float64 `json:"flow_start"`
	FlowEnd   []float64 `json:"flow_end"`
}

// PacketDecision is a pattern the tuner emitted: decided after Epoch, run
// from Effective.
type PacketDecision struct {
	Epoch     int   `json:"epoch"`
	Version   int64 `json:"version"`
	Effective int   `json:"effective"`
}

// The paper's §7.3 switch and transport, as the harness builds them.
var (
	defaultPacketTCP    = PacketTCP{Segment: 1460, Buffer: 1 << 20, InitialCwnd: 10, DelAckCount: 1, DelAckTimout: 1e-4, MinRTO: 1e-3}
	defaultPacketSwitch = PacketSwitch{RedMin: 32, RedMax: 60, BufferBytes: 32e6, AckPriority: true, MTU: 1500}
)

// The runs of a case at packet level, in PacketInputs' order: baseline,
// REACT, then the variants.
const (
	PacketBaseline = "baseline"
	PacketReact    = "react"
)

// PacketInputs resolves case c into the harness's inputs, one per run;
// s must come from ForPacket. note is the scaling sentence.
func (s *Scenario) PacketInputs(c Case, note string) ([]PacketInput, error) {
	in, err := s.instance(c)
	if err != nil {
		return nil, err
	}
	sc := in.sc
	var out []PacketInput
	add := func(name string, pats []*ten.Pattern, tune, external, failures bool) error {
		pi, err := in.packetInput(name, pats, tune, external, failures)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		pi.Scaling = note
		out = append(out, pi)
		return nil
	}
	if err := add(PacketBaseline, nil, false, true, true); err != nil {
		return nil, err
	}
	if err := add(PacketReact, nil, true, true, true); err != nil {
		return nil, err
	}
	for k, v := range sc.Variants {
		if v.Flat {
			return nil, fmt.Errorf("variant %s: flat variants are not supported at packet level", v.Name)
		}
		if err := add(v.Name, s.cells[c.Cell].variants[k], false, !v.NoExternal, !v.NoFailures); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// packetInput is one run: pats (nil: the initial patterns, generated by
// the harness) with or without tuners, external flows and failures.
func (in *instance) packetInput(name string, pats []*ten.Pattern, tune, external, failures bool) (PacketInput, error) {
	net := in.simNet
	pi := PacketInput{Format: "react.ns3-input/v1", Run: name, Seed: in.seed, Epochs: in.sc.Epochs, Warmup: 1e-3,
		MaxSim: 1 + 0.1*float64(in.sc.Epochs), EpochTimeout: 0.05, TCP: defaultPacketTCP, Switch: defaultPacketSwitch,
		Nodes: net.Nodes(), Hosts: net.Hosts(), External: []PacketExternal{}}
	capOf := map[int]float64{}
	if failures {
		for _, c := range in.cuts {
			if c.Capacity <= 0 {
				return pi, fmt.Errorf("cable %s-%s cut to %g bits/s: the packet engine needs a positive capacity", c.From, c.To, c.Capacity)
			}
			capOf[c.Link] = c.Capacity
		}
	}
	for id := range net.NumLinks() {
		l := net.Link(topo.LinkID(id))
		cp := l.Capacity
		if v, ok := capOf[id]; ok {
			cp = v
		}
		pi.Links = append(pi.Links, [4]float64{float64(l.From), float64(l.To), cp, l.Latency})
	}
	ids := map[string]int{}
	pathID := func(src, dst int, port uint64) int {
		nodes := []int{src}
		for _, id := range net.Path(src, dst, int(port)) {
			nodes = append(nodes, net.Link(id).To)
		}
		k := fmt.Sprint(nodes)
		id, ok := ids[k]
		if !ok {
			id = len(pi.Paths)
			ids[k] = id
			pi.Paths = append(pi.Paths, nodes)
		}
		return id
	}
	rng := caseRand(in.seed, streamSim)
	if external {
		for _, e := range in.ext {
			for range e.P {
				pi.External = append(pi.External, PacketExternal{e.Src, e.Dst, pathID(e.Src, e.Dst, rng.Uint64())})
			}
		}
	}
	tuners := caseRand(in.seed, streamTuner)
	for i := range in.sc.Jobs {
		spec, p := &in.sc.Jobs[i], in.patterns[i]
		seed := tuners.Uint64() + uint64(i) // drawn for every job, as the fluid engine does for tuned ones
		j := PacketJob{Name: spec.Name, Op: p.Op.String(), Algo: p.Algo, Ranks: p.Ranks, Root: p.Root, Bytes: spec.Bytes,
			Hosts: in.hosts[i], Ports: spec.ports(), Gap: spec.Gap, Tune: tune && spec.react()}
		if j.Tune {
			cfg, err := in.sc.Tuner.config(seed >> 11) // 53 bits: a JSON number every parser reads exactly
			if err != nil {
				return pi, err
			}
			b, err := json.Marshal(cfg)
			if err != nil {
				return pi, err
			}
			j.Tuner = string(b)
		}
		if pats != nil {
			for _, f := range pats[i].Flows {
				j.Flows = append(j.Flows, [6]float64{float64(f.Chunk), float64(f.Step), float64(f.Src), float64(f.Dst), float64(f.Kind), f.Fraction})
			}
		}
		for _, f := range p.Flows {
			j.Chunks = max(j.Chunks, int(f.Chunk)+1)
		}
		salt := rng.Uint64()
		for c := range j.Chunks {
			for a := range p.Ranks {
				for b := range p.Ranks {
					for port := range j.Ports {
						if in.hosts[i][a] == in.hosts[i][b] {
							j.Routes = append(j.Routes, -1)
							continue
						}
						conn := uint64(c)<<40 ^ uint64(a)<<20 ^ uint64(b)
						h := splitmix.Next(salt + splitmix.Next(conn) + uint64(port)*0x9e3779b97f4a7c15)
						j.Routes = append(j.Routes, pathID(in.hosts[i][a], in.hosts[i][b], h))
					}
				}
			}
		}
		pi.Jobs = append(pi.Jobs, j)
	}
	return pi, nil
}

// PacketRun turns the harness's outputs for case c (in PacketInputs'
// order) into the case's Run, as RunCase does for the fluid engine.
func (s *Scenario) PacketRun(c Case, outs []PacketOutput) (*Run, error) {
	in, err := s.instance(c)
	if err != nil {
		return nil, err
	}
	sc := in.sc
	if want := 2 + len(sc.Variants); len(outs) != want {
		return nil, fmt.Errorf("packet run: %d outputs, want %d", len(outs), want)
	}
	series := make([][]Series, len(outs))
	for k, o := range outs {
		if len(o.Jobs) != len(sc.Jobs) {
			return nil, fmt.Errorf("packet run %d: %d jobs, want %d", k, len(o.Jobs), len(sc.Jobs))
		}
		for i, j := range o.Jobs {
			if len(j.Epochs) != sc.Epochs {
				return nil, fmt.Errorf("packet run %d: job %s ran %d of %d epochs", k, j.Name, len(j.Epochs), sc.Epochs)
			}
			var times, reduce []float64
			net := 0.0
			for e, ep := range j.Epochs {
				times, reduce = append(times, ep.Elapsed), append(reduce, ep.Reduce)
				if e >= sc.MeasureAfter {
					net += ep.NetBytes / float64(sc.Epochs-sc.MeasureAfter)
				}
			}
			if in.patterns[i].Op != ten.AllReduce {
				reduce = nil
			}
			ser := newSeries(times, reduce, sc.Jobs[i].Bytes, sc.MeasureAfter)
			ser.NetBytes = net
			series[k] = append(series[k], ser)
		}
	}
	run := &Run{Cell: c.Cell, Params: slices.Clone(s.cells[c.Cell].params), Seed: c.Seed, Hosts: in.hosts, External: in.ext, Cuts: in.cuts}
	for i := range sc.Jobs {
		j, p := &sc.Jobs[i], in.patterns[i]
		jr := JobRun{Name: j.Name, Op: p.Op.String(), Algo: p.Algo, Ranks: p.Ranks, Bytes: j.Bytes, Tuned: j.react(),
			Baseline: series[0][i], React: series[1][i]}
		jr.Improvement = gain(jr.Baseline.AlgBW, jr.React.AlgBW)
		jr.ImprovementP95 = gain(jr.Baseline.AlgBWP95, jr.React.AlgBWP95)
		for _, d := range outs[1].Jobs[i].Decisions {
			// The C ABI hands out the new pattern, not the tuner's
			// trials: no swaps, batch or prediction here.
			jr.Decisions = append(jr.Decisions, Decision{Epoch: d.Epoch, Effective: d.Effective})
			jr.Changes++
		}
		for k, v := range sc.Variants {
			jr.Variants = append(jr.Variants, NamedSeries{v.Name, series[2+k][i]})
		}
		run.Jobs = append(run.Jobs, jr)
	}
	return run, nil
}
