// Package netsim is a flow-level fluid network simulator: collective
// patterns of several jobs and long-running external flows share the links
// of a topo.Topology by max-min fairness.
//
// # Model
//
// Rates are the max-min fair allocation (progressive filling over the link
// capacities), recomputed whenever a transfer starts or ends; between such
// events every rate is constant, so the simulation jumps from event to event
// with no time step.
//
// A flow's bytes occupy every link of its path from the moment it starts
// (the sender transmits at the flow's fair rate) until its last byte is
// sent; the flow completes, and its receiver may send what depends on it,
// the path latency (the sum of its links' latencies) after that. So
// FCT = latency + the time the bytes take at their changing rate. Placing
// the latency after the transfer, rather than delaying the flow's arrival
// on the links by it, keeps a flow's share of a link independent of where
// the link lies on its path, which is what makes the closed forms of a star
// or a shared bottleneck exact (one flow alone: latency + size/capacity; k
// flows on a link: latency + k*size/capacity for each).
//
// # Patterns
//
// Flow f of a job's pattern carries f.Fraction * Job.Bytes bytes from the
// host of rank f.Src to the host of rank f.Dst. It starts as soon as its
// inputs have arrived: every flow g of the same chunk with g.Dst == f.Src
// and g.Step < f.Step. There is no other barrier: steps and chunks run as
// the data allows, as a CCL with one stream per chunk does. A flow between
// two ranks of one host (two NICs of one host included, topo.HostOf) never
// enters the network: it takes no time, or its bytes at Job.Intra. An epoch
// ends when all its flows have completed (and Job.After more); the job's
// next epoch starts Job.Gap later, so the epochs of different jobs drift
// against each other. A job on hosts of several GPUs runs its pattern once
// per rail (Job.Rails).
//
// # ECMP ports
//
// Every flow of a pattern owns Job.Ports connections (source ports),
// identified by (job, chunk, src rank, dst rank, i) for i < Ports, and picks
// one uniformly at random each epoch; the connection's path is
// topo.Path(src host, dst host, port). External flows pick one random port
// for the whole run: they are long-lived connections, and a connection's
// 5-tuple does not change while it lives.
//
// # Congestion that starts and stops
//
// External flows added with AddExternalDuring exist only while one job runs
// a range of its epochs: they join the network when that epoch starts and
// leave when the last epoch of the range ends, so a scenario can ask "what
// does the tuner do when congestion appears at epoch 30?" in the job's own
// time, independent of how long its epochs take. Their port is drawn at the
// start of Run like every external flow's, so a window does not reroute any
// other flow.
package netsim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/react-torch/react-torch/internal/splitmix"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// DefaultPorts is the number of ECMP connections per pattern flow when
// Job.Ports is 0 (the paper's §7.3 setting).
const DefaultPorts = 4

// Job is one collective job: rank r runs on host Hosts[r] (several ranks
// may share a host).
//
// With Rails > 1 the job is the inter-host part of a hierarchical
// collective on hosts of several GPUs: the pattern runs Rails times at
// once, one copy per local GPU index (NCCL's channels), each carrying
// 1/Rails of the bytes; rail i's rank r is on node Hosts[i*ranks+r] (the
// host itself when its GPUs share one NIC, else the rail's own NIC). The
// rails of a flow depend only on the same rail. Before and After are the
// intra-host phases (a reduce-scatter before, an all-gather after), local
// work on links the network does not see: an epoch's first flows start
// Before after it does, and it ends After after its last flow.
type Job struct {
	Hosts []int
	Bytes float64 // message size in bytes
	Ports int     // ECMP connections per flow; 0 means DefaultPorts
	Gap   float64 // idle seconds between the end of an epoch and the start of the next
	Rails int     // copies of the pattern run at once; 0 means 1
	// Intra is the rate, bits/s, of a flow between two ranks of one host
	// (topo.HostOf), which never enters the network; 0: instant.
	Intra         float64
	Before, After float64 // seconds
}

// rails is the number of copies of the pattern the job runs.
func (j *Job) rails() int { return max(j.Rails, 1) }

// EpochResult is what one epoch of one job measured. FlowStart and
// FlowFinish are indexed like Pattern.Flows, rail after rail (rail i's flow
// f at i*len(Flows)+f), and count seconds from Start; FlowFinish-FlowStart
// is the flow's FCT.
type EpochResult struct {
	Job, Epoch int
	Pattern    *ten.Pattern
	Rails      int
	Start      float64 // simulated time the epoch started
	FlowStart  []float64
	FlowFinish []float64
	Elapsed    float64 // the end (After its last completion) minus Start: the collective time
	NetBytes   float64 // bytes its flows sent over the network
}

// Driver supplies each job's pattern epoch by epoch and receives the
// results, so that a tuner can change the pattern between epochs. Pattern
// is called when the epoch starts, Done when it ends (before the job's next
// Pattern call). A pattern must not be modified after it is handed over
// until the epoch that runs it is Done.
type Driver interface {
	// Pattern returns the pattern job runs in epoch, or nil to stop the job.
	Pattern(job, epoch int) *ten.Pattern
	Done(r EpochResult)
}

// Fixed is a Driver that runs Patterns[job] in every epoch and keeps every
// result.
type Fixed struct {
	Patterns []*ten.Pattern
	Results  []EpochResult
}

// Pattern returns Patterns[job].
func (f *Fixed) Pattern(job, epoch int) *ten.Pattern { return f.Patterns[job] }

// Done appends r to Results.
func (f *Fixed) Done(r EpochResult) { f.Results = append(f.Results, r) }

// Sim simulates jobs and external flows on a topology. Configure it with
// AddExternal and SetCapacity, then Run; Run may be called again and starts
// from time zero with the same configuration. A Sim is not safe for
// concurrent use; the Topology it runs on may be shared.
type Sim struct {
	topo  *topo.Topology
	seed  uint64
	cap   []float64
	ext   []external
	paths map[pathKey]route
	arena []topo.LinkID

	// Run state.
	now     float64
	epochs  int
	driver  Driver
	jobs    []*jobState
	running int
	act     []xfer
	events  eventHeap
	seq     uint64
	ready   []int32 // flows of the job being drained whose inputs have all arrived
	nextEnd float64
	err     error
	extPort []uint64 // each external flow's port, drawn at the start of Run
	extOn   []bool   // windowed external flows in the network now
	dirty   bool     // external flows joined or left: rates need refilling

	// Progressive-filling scratch, indexed by link.
	lrem   []float64
	lcnt   []int32 // transfers on the link whose rate is not fixed yet
	lnum   []int32 // transfers on the link
	loff   []int32
	lmark  []uint32
	stamp  uint32
	links  []topo.LinkID // links that carry an active transfer
	lflows []int32       // CSR: transfers on each link
	frozen []bool
}

type external struct {
	src, dst int
	windowed bool
	w        Window
}

// Window is the span of a job's epochs during which external flows exist:
// from the start of job Job's epoch From to the end of its epoch To-1, or
// to the end of the run when To is 0. Flows of a window whose job stops
// (its driver returns nil, or it ran every epoch) leave with it.
type Window struct {
	Job, From, To int
}

type pathKey struct {
	src, dst int32
	port     uint64
}

type route struct {
	links []topo.LinkID
	lat   float64
}

// xfer is a transfer in flight: a pattern flow (job >= 0) or an external
// flow (job < 0, never ends).
type xfer struct {
	links     []topo.LinkID
	rem, size float64 // bits
	rate, end float64
	lat       float64
	job, flow int32
}

// New returns a simulator on t. seed drives every random choice (ECMP
// ports); the same seed gives the same run.
func New(t *topo.Topology, seed uint64) *Sim {
	s := &Sim{topo: t, seed: seed, paths: map[pathKey]route{}}
	n := t.NumLinks()
	s.cap = make([]float64, n)
	for i := range s.cap {
		s.cap[i] = t.Link(topo.LinkID(i)).Capacity
	}
	s.lrem = make([]float64, n)
	s.lcnt = make([]int32, n)
	s.lnum = make([]int32, n)
	s.loff = make([]int32, n)
	s.lmark = make([]uint32, n)
	return s
}

// AddExternal adds count infinitely backlogged flows from host src to host
// dst, present for the whole of every Run.
func (s *Sim) AddExternal(src, dst, count int) error {
	return s.addExternal(external{src: src, dst: dst}, count)
}

// AddExternalDuring adds count infinitely backlogged flows from host src to
// host dst that exist only during w (see Window). w.Job is checked against
// the jobs of each Run.
func (s *Sim) AddExternalDuring(src, dst, count int, w Window) error {
	switch {
	case w.Job < 0:
		return fmt.Errorf("netsim: external flow window: job %d, want >= 0", w.Job)
	case w.From < 0:
		return fmt.Errorf("netsim: external flow window: from epoch %d, want >= 0", w.From)
	case w.To != 0 && w.To <= w.From:
		return fmt.Errorf("netsim: external flow window: epochs [%d, %d) are empty (to = 0 means no end)", w.From, w.To)
	}
	return s.addExternal(external{src: src, dst: dst, windowed: true, w: w}, count)
}

func (s *Sim) addExternal(e external, count int) error {
	src, dst := e.src, e.dst
	h := s.topo.Hosts()
	switch {
	case src < 0 || src >= h:
		return fmt.Errorf("netsim: external flow source host %d out of range [0, %d)", src, h)
	case dst < 0 || dst >= h:
		return fmt.Errorf("netsim: external flow destination host %d out of range [0, %d)", dst, h)
	case src == dst:
		return fmt.Errorf("netsim: external flow from host %d to itself", src)
	case count < 0:
		return fmt.Errorf("netsim: negative external flow count %d", count)
	}
	for range count {
		s.ext = append(s.ext, e)
	}
	return nil
}

// SetCapacity sets a link's capacity for every later Run (a partial link
// failure: the paper cuts links to 30, 50 or 80 Gbps).
func (s *Sim) SetCapacity(link topo.LinkID, bps float64) error {
	if link < 0 || int(link) >= len(s.cap) {
		return fmt.Errorf("netsim: link %d out of range [0, %d)", link, len(s.cap))
	}
	if !(bps > 0) || math.IsInf(bps, 0) {
		return fmt.Errorf("netsim: link %d: capacity %v bits/s, want a positive finite number", link, bps)
	}
	s.cap[link] = bps
	return nil
}

// Capacity is a link's current capacity.
func (s *Sim) Capacity(link topo.LinkID) float64 { return s.cap[link] }

// Now is the simulated time; after Run, when the last job stopped (its
// last epoch's end plus its Gap).
func (s *Sim) Now() float64 { return s.now }

// Run simulates each job for up to epochs epochs (fewer where the driver
// returns nil) and reports every epoch to d. All jobs start at time zero.
func (s *Sim) Run(jobs []Job, epochs int, d Driver) error {
	if d == nil {
		return errors.New("netsim: nil driver")
	}
	for i, j := range jobs {
		if len(j.Hosts) == 0 {
			return fmt.Errorf("netsim: job %d has no hosts", i)
		}
		for r, h := range j.Hosts {
			if h < 0 || h >= s.topo.Hosts() {
				return fmt.Errorf("netsim: job %d rank %d on host %d, out of range [0, %d)", i, r, h, s.topo.Hosts())
			}
		}
		if !(j.Bytes >= 0) || math.IsInf(j.Bytes, 0) {
			return fmt.Errorf("netsim: job %d: message size %v bytes", i, j.Bytes)
		}
		if j.Ports < 0 {
			return fmt.Errorf("netsim: job %d: negative port count %d", i, j.Ports)
		}
		if j.Rails < 0 || len(j.Hosts)%j.rails() != 0 {
			return fmt.Errorf("netsim: job %d: %d rails of %d hosts, want a whole number of ranks a rail", i, j.Rails, len(j.Hosts))
		}
		for _, v := range []struct {
			name string
			x    float64
		}{{"gap", j.Gap}, {"intra-host rate", j.Intra}, {"before", j.Before}, {"after", j.After}} {
			if !(v.x >= 0) || math.IsInf(v.x, 0) {
				return fmt.Errorf("netsim: job %d: %s %v, want a finite number >= 0", i, v.name, v.x)
			}
		}
	}
	for _, e := range s.ext {
		if e.windowed && e.w.Job >= len(jobs) {
			return fmt.Errorf("netsim: external flows %d -> %d: window of job %d, but %d jobs run", e.src, e.dst, e.w.Job, len(jobs))
		}
	}
	s.reset(jobs, epochs, d)
	// The background has its own random source, so that adding a job does
	// not reroute it.
	rng := rand.New(rand.NewPCG(s.seed, 0))
	s.extPort = grow(s.extPort, len(s.ext))
	s.extOn = grow(s.extOn, len(s.ext))
	clear(s.extOn)
	for i := range s.ext {
		s.extPort[i] = rng.Uint64()
		if !s.ext[i].windowed {
			s.addXfer(i)
		}
	}
	for _, j := range s.jobs {
		s.push(event{t: 0, kind: evEpoch, job: int32(j.id)})
	}
	s.fill()
	for s.running > 0 && s.err == nil {
		t := s.nextEnd
		if len(s.events) > 0 && s.events[0].t < t {
			t = s.events[0].t
		}
		if math.IsInf(t, 1) {
			return errors.New("netsim: stalled: jobs are running but no flow can progress")
		}
		s.advance(t)
		changed := s.finishTransfers()
		for len(s.events) > 0 && s.events[0].t <= t && s.err == nil {
			e := s.pop()
			j := s.jobs[e.job]
			switch e.kind {
			case evArrive:
				s.complete(j, e.flow)
			case evEpoch:
				s.startEpoch(j)
			case evLaunch:
				s.launch(j)
			case evEnd:
				s.endEpoch(j)
			}
			changed = s.drain(j) || changed
		}
		if changed || s.dirty {
			s.fill()
			s.dirty = false
		}
	}
	s.driver = nil
	return s.err
}

// addXfer puts external flow i into the network.
func (s *Sim) addXfer(i int) {
	e := s.ext[i]
	r := s.path(e.src, e.dst, s.extPort[i])
	s.act = append(s.act, xfer{links: r.links, rem: math.Inf(1), size: math.Inf(1), job: -1, flow: int32(i)})
}

// openWindows puts into the network the external flows whose window
// starts at job j's epoch.
func (s *Sim) openWindows(j, epoch int) {
	for i := range s.ext {
		if e := &s.ext[i]; e.windowed && e.w.Job == j && e.w.From == epoch && !s.extOn[i] {
			s.extOn[i] = true
			s.addXfer(i)
			s.dirty = true
		}
	}
}

// closeWindows takes out of the network the external flows of job j's
// windows that end before its epoch next (all of them when the job stops).
func (s *Sim) closeWindows(j, next int, stopped bool) {
	for i := range s.ext {
		if e := &s.ext[i]; e.windowed && e.w.Job == j && s.extOn[i] && (stopped || e.w.To == next) {
			s.extOn[i] = false
			s.removeXfer(i)
			s.dirty = true
		}
	}
}

// removeXfer takes external flow i out of the network.
func (s *Sim) removeXfer(i int) {
	for k := range s.act {
		if x := &s.act[k]; x.job < 0 && x.flow == int32(i) {
			last := len(s.act) - 1
			s.act[k] = s.act[last]
			s.act = s.act[:last]
			return
		}
	}
}

func (s *Sim) reset(jobs []Job, epochs int, d Driver) {
	s.now, s.epochs, s.driver, s.err = 0, epochs, d, nil
	s.act = s.act[:0]
	s.events = s.events[:0]
	s.seq = 0
	s.jobs = s.jobs[:0]
	for i, j := range jobs {
		if j.Ports == 0 {
			j.Ports = DefaultPorts
		}
		s.jobs = append(s.jobs, &jobState{
			Job: j, id: i,
			rng:  rand.New(rand.NewPCG(s.seed, uint64(i)+1)),
			salt: splitmix.Mix(s.seed ^ splitmix.Mix(uint64(i)+0x5bd1e995)),
		})
	}
	s.running = len(jobs)
}

// path returns the cached route of a connection.
func (s *Sim) path(src, dst int, port uint64) route {
	k := pathKey{int32(src), int32(dst), port}
	if r, ok := s.paths[k]; ok {
		return r
	}
	a := len(s.arena)
	s.arena = s.topo.AppendPath(s.arena, src, dst, int(port))
	links := s.arena[a:len(s.arena):len(s.arena)]
	r := route{links: links, lat: s.topo.Latency(links)}
	s.paths[k] = r
	return r
}

// advance moves time to t at the current rates.
func (s *Sim) advance(t float64) {
	if dt := t - s.now; dt > 0 {
		for i := range s.act {
			if x := &s.act[i]; x.job >= 0 {
				x.rem -= x.rate * dt
			}
		}
	}
	s.now = t
}

// doneTol is the share of a transfer's size below which rounding leftovers
// count as sent, so that transfers ending together end in one event.
const doneTol = 1e-12

// finishTransfers removes the transfers whose last byte is sent and
// schedules their arrivals.
func (s *Sim) finishTransfers() bool {
	changed := false
	for i := 0; i < len(s.act); {
		x := &s.act[i]
		if x.job < 0 || (x.end > s.now && x.rem > doneTol*x.size) {
			i++
			continue
		}
		s.push(event{t: s.now + x.lat, kind: evArrive, job: x.job, flow: x.flow})
		last := len(s.act) - 1
		s.act[i] = s.act[last]
		s.act = s.act[:last]
		changed = true
	}
	return changed
}

// fill computes the max-min fair rates of the active transfers by
// progressive filling, over only the links that carry them, and the time
// the next transfer ends.
func (s *Sim) fill() {
	s.stamp++
	if s.stamp == 0 {
		clear(s.lmark)
		s.stamp = 1
	}
	s.links = s.links[:0]
	total := int32(0)
	for i := range s.act {
		for _, l := range s.act[i].links {
			if s.lmark[l] != s.stamp {
				s.lmark[l] = s.stamp
				s.lnum[l] = 0
				s.links = append(s.links, l)
			}
			s.lnum[l]++
			total++
		}
	}
	// Lay the transfers of each link out contiguously; loff[l] ends as the
	// start of link l's run.
	off := int32(0)
	for _, l := range s.links {
		s.loff[l] = off
		off += s.lnum[l]
		s.lcnt[l] = s.lnum[l]
		s.lrem[l] = s.cap[l]
	}
	s.lflows = grow(s.lflows, int(total))
	for i := range s.act {
		for _, l := range s.act[i].links {
			s.lflows[s.loff[l]] = int32(i)
			s.loff[l]++
		}
	}
	for _, l := range s.links {
		s.loff[l] -= s.lnum[l]
	}
	s.frozen = grow(s.frozen, len(s.act))
	clear(s.frozen)
	// Each round saturates the link with the smallest fair share and fixes
	// the rates of the transfers on it.
	live := s.links
	for len(live) > 0 {
		best, share := -1, math.Inf(1)
		for k := 0; k < len(live); {
			l := live[k]
			if s.lcnt[l] == 0 {
				live[k] = live[len(live)-1]
				live = live[:len(live)-1]
				continue
			}
			if sh := s.lrem[l] / float64(s.lcnt[l]); sh < share {
				best, share = k, sh
			}
			k++
		}
		if best < 0 {
			break
		}
		share = max(share, 0)
		b := live[best]
		for _, i := range s.lflows[s.loff[b] : s.loff[b]+s.lnum[b]] {
			if s.frozen[i] {
				continue
			}
			s.frozen[i] = true
			x := &s.act[i]
			x.rate = share
			for _, l := range x.links {
				s.lrem[l] -= share
				s.lcnt[l]--
			}
		}
	}
	s.nextEnd = math.Inf(1)
	for i := range s.act {
		x := &s.act[i]
		if x.job < 0 {
			continue
		}
		x.end = s.now + x.rem/x.rate
		s.nextEnd = min(s.nextEnd, x.end)
	}
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n, 2*n)
	}
	return b[:n]
}
