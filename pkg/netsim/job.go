package netsim

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/react-torch/react-torch/internal/splitmix"
	"github.com/react-torch/react-torch/pkg/ten"
)

type jobState struct {
	Job
	id    int
	epoch int
	rng   *rand.Rand
	salt  uint64

	pat *ten.Pattern
	// Derived from flows, a copy of the pattern they were derived from, so
	// that a driver that hands back an equal pattern costs nothing.
	flows  []ten.Flow
	inputs []int32 // flows each flow waits for
	depOff []int32 // CSR: the flows waiting for each flow
	deps   []int32

	// Per flow of every rail, rail after rail.
	pending []int32
	port    []uint64
	left    int
	start   float64
	fstart  []float64
	fend    []float64
	net     float64 // bytes sent over the network this epoch
}

// startEpoch asks the driver for the job's next pattern and queues the
// flows that wait for nothing.
func (s *Sim) startEpoch(j *jobState) {
	var p *ten.Pattern
	if j.epoch < s.epochs {
		p = s.driver.Pattern(j.id, j.epoch)
	}
	if p == nil {
		s.running--
		s.closeWindows(j.id, j.epoch, true)
		return
	}
	if err := p.Validate(); err != nil {
		s.err = fmt.Errorf("netsim: job %d epoch %d: %w", j.id, j.epoch, err)
		return
	}
	rails := j.rails()
	if p.Ranks*rails != len(j.Hosts) {
		s.err = fmt.Errorf("netsim: job %d epoch %d: pattern has %d ranks, job has %d hosts on %d rail(s)", j.id, j.epoch, p.Ranks, len(j.Hosts), rails)
		return
	}
	s.openWindows(j.id, j.epoch)
	j.prepare(p)
	j.pat = p
	n := len(p.Flows)
	j.fstart = make([]float64, n*rails)
	j.fend = make([]float64, n*rails)
	j.pending = j.pending[:0]
	for range rails {
		j.pending = append(j.pending, j.inputs...)
	}
	j.left = n * rails
	j.start = s.now
	j.net = 0
	j.port = grow(j.port, n*rails)
	for g := range j.port {
		fl := &p.Flows[g%n]
		conn := uint64(fl.Chunk)<<40 ^ uint64(fl.Src)<<20 ^ uint64(fl.Dst) ^ uint64(g/n)<<56
		j.port[g] = splitmix.Mix(j.salt + splitmix.Mix(conn) + uint64(j.rng.IntN(j.Ports))*0x9e3779b97f4a7c15)
	}
	if j.Before > 0 {
		s.push(event{t: s.now + j.Before, kind: evLaunch, job: int32(j.id)})
		return
	}
	s.launch(j)
}

// launch queues the flows of every rail that wait for nothing.
func (s *Sim) launch(j *jobState) {
	for g, k := range j.pending {
		if k == 0 {
			s.ready = append(s.ready, int32(g))
		}
	}
}

// prepare derives, for every flow, the flows it waits for: those of its
// chunk into its source at an earlier step.
func (j *jobState) prepare(p *ten.Pattern) {
	if j.flows != nil && slices.Equal(j.flows, p.Flows) {
		return
	}
	j.flows = append(j.flows[:0], p.Flows...)
	n := len(p.Flows)
	ix := ten.NewChunkIndex(p)
	j.inputs = grow(j.inputs, n)
	clear(j.inputs)
	head := make([]int32, p.Ranks) // last flow into each rank so far in the chunk
	for i := range head {
		head[i] = -1
	}
	next := make([]int32, n)
	var from, to []int32
	for c := 0; c < ix.Len(); c++ {
		fl := ix.Chunk(c)
		for a := 0; a < len(fl); {
			step := p.Flows[fl[a]].Step
			b := a
			for b < len(fl) && p.Flows[fl[b]].Step == step {
				b++
			}
			for _, f := range fl[a:b] {
				for g := head[p.Flows[f].Src]; g >= 0; g = next[g] {
					j.inputs[f]++
					from, to = append(from, g), append(to, f)
				}
			}
			for _, f := range fl[a:b] {
				d := p.Flows[f].Dst
				next[f], head[d] = head[d], f
			}
			a = b
		}
		for _, f := range fl {
			head[p.Flows[f].Dst] = -1
		}
	}
	j.depOff = grow(j.depOff, n+1)
	clear(j.depOff)
	for _, g := range from {
		j.depOff[g+1]++
	}
	for i := 0; i < n; i++ {
		j.depOff[i+1] += j.depOff[i]
	}
	j.deps = grow(j.deps, len(from))
	fill := append([]int32(nil), j.depOff[:n]...)
	for e, g := range from {
		j.deps[fill[g]] = to[e]
		fill[g]++
	}
}

// drain starts the job's ready flows; a flow between two ranks of one host
// bypasses the network (instant, or at the job's intra-host rate). It
// reports whether a transfer joined the network.
func (s *Sim) drain(j *jobState) bool {
	changed := false
	for len(s.ready) > 0 {
		g := s.ready[len(s.ready)-1]
		s.ready = s.ready[:len(s.ready)-1]
		n := len(j.pat.Flows)
		off := int(g) / n * j.pat.Ranks // rail's first host
		fl := &j.pat.Flows[int(g)%n]
		j.fstart[g] = s.now - j.start
		src, dst := j.Hosts[off+int(fl.Src)], j.Hosts[off+int(fl.Dst)]
		bits := fl.Fraction * j.Bytes * 8 / float64(j.rails())
		if s.topo.HostOf(src) == s.topo.HostOf(dst) {
			if j.Intra > 0 {
				s.push(event{t: s.now + bits/j.Intra, kind: evArrive, job: int32(j.id), flow: g})
			} else {
				s.complete(j, g)
			}
			continue
		}
		r := s.path(src, dst, j.port[g])
		j.net += bits / 8
		s.act = append(s.act, xfer{links: r.links, rem: bits, size: bits, lat: r.lat, job: int32(j.id), flow: g})
		changed = true
	}
	return changed
}

// complete records the arrival of flow g (of any rail), readies the flows
// of its rail that waited only for it and ends the epoch, After later,
// after its last flow.
func (s *Sim) complete(j *jobState, g int32) {
	j.fend[g] = s.now - j.start
	j.left--
	n := int32(len(j.pat.Flows))
	f, base := g%n, g-g%n
	for _, d := range j.deps[j.depOff[f]:j.depOff[f+1]] {
		k := base + d
		if j.pending[k]--; j.pending[k] == 0 {
			s.ready = append(s.ready, k)
		}
	}
	if j.left > 0 {
		return
	}
	if j.After > 0 {
		s.push(event{t: s.now + j.After, kind: evEnd, job: int32(j.id)})
		return
	}
	s.endEpoch(j)
}

// endEpoch reports the epoch and schedules the next.
func (s *Sim) endEpoch(j *jobState) {
	s.driver.Done(EpochResult{
		Job: j.id, Epoch: j.epoch, Pattern: j.pat, Rails: j.rails(), Start: j.start,
		FlowStart: j.fstart, FlowFinish: j.fend, Elapsed: s.now - j.start, NetBytes: j.net,
	})
	j.fstart, j.fend = nil, nil
	j.epoch++
	s.closeWindows(j.id, j.epoch, false)
	s.push(event{t: s.now + j.Gap, kind: evEpoch, job: int32(j.id)})
}

const (
	evArrive = iota // a flow's last byte reached its destination
	evEpoch         // a job starts its next epoch
	evLaunch        // a job's intra-host phase before its flows ended
	evEnd           // a job's intra-host phase after its flows ended
)

type event struct {
	t         float64
	seq       uint64
	kind      uint8
	job, flow int32
}

// eventHeap is a binary min-heap on (t, seq): ties go first in, first out,
// which keeps runs deterministic.
type eventHeap []event

func (e event) before(o event) bool { return e.t < o.t || (e.t == o.t && e.seq < o.seq) }

func (s *Sim) push(e event) {
	e.seq = s.seq
	s.seq++
	h := append(s.events, e)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	s.events = h
}

func (s *Sim) pop() event {
	h := s.events
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && h[l].before(h[m]) {
			m = l
		}
		if r := l + 1; r < len(h) && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.events = h
	return top
}
