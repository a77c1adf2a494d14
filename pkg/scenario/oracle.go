package scenario

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

// The oracle answers "how much could the tuner's transforms have gained
// here?" It knows the true congestion (it runs the case's own simulator,
// same seeds, same port draws) and searches exhaustively: every valid
// transform of the three kinds the tuner uses, then every transform of the
// best of those. Each candidate runs statically for the whole case and is
// judged on the measured epochs, so the oracle is never worse than the
// baseline (the baseline is a candidate) but may profit from the case's
// particular port draws: it is an upper bound on what one or two static
// transforms achieve in this case, not a prediction.

type oracleResult struct {
	series     []Series
	patterns   []*ten.Pattern // each job's chosen pattern
	swaps      [][]string
	evaluated  []int
	depth      []int
	exhaustive []bool
}

// adopt records job j's chosen move and, when it changes the job's
// pattern, re-runs the static patterns so the next job is judged beside it.
func (in *instance) adopt(sim *netsim.Sim, res *oracleResult, choice []*ten.Pattern, cur []Series, j int, best move) ([]Series, error) {
	for _, s := range best.swaps {
		res.swaps[j] = append(res.swaps[j], s.String())
	}
	if best.p == choice[j] {
		return cur, nil
	}
	choice[j] = best.p
	return in.static(sim, choice)
}

type move struct {
	p     *ten.Pattern
	swaps []transform.Swap
	score float64
}

// fingerprint identifies a pattern by its flows' endpoints (transforms
// change nothing else).
func fingerprint(p *ten.Pattern) string {
	b := make([]byte, 0, 8*len(p.Flows))
	for i := range p.Flows {
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Flows[i].Src))
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Flows[i].Dst))
	}
	return string(b)
}

// neighbours lists every pattern one valid transform away from p that seen
// does not hold yet, adding them to seen: position swaps, then chunk-local,
// then global, each in a fixed order (ties in the search go to the first).
func neighbours(p *ten.Pattern, seen map[string]bool) []move {
	var out []move
	try := func(s transform.Swap) {
		q := transform.Apply(p, s)
		fp := fingerprint(q)
		if seen[fp] || semantics.Check(q) != nil {
			return
		}
		seen[fp] = true
		out = append(out, move{p: q, swaps: []transform.Swap{s}})
	}
	chunks := p.Chunks()
	ps := transform.NewPositions(p)
	for c := 0; c < chunks; c++ {
		vs := ps.Occupied(c)
		for k, a := range vs {
			for _, b := range ps.Partners(a) {
				if i, _ := slices.BinarySearchFunc(vs, b, cmpVertex); i > k {
					try(transform.PositionSwap(a, b))
				}
			}
		}
	}
	if chunks > 1 {
		for c := 0; c < chunks; c++ {
			for x := 0; x < p.Ranks; x++ {
				for y := x + 1; y < p.Ranks; y++ {
					try(transform.ChunkSwap(c, x, y))
				}
			}
		}
	}
	for x := 0; x < p.Ranks; x++ {
		for y := x + 1; y < p.Ranks; y++ {
			try(transform.GlobalSwap(x, y))
		}
	}
	return out
}

func cmpVertex(a, b transform.Vertex) int {
	if a.Step != b.Step {
		return int(a.Step - b.Step)
	}
	return int(a.Rank - b.Rank)
}

// oracleEstimate is the number of simulations the oracle will run for job
// j, for the progress bar.
func (in *instance) oracleEstimate(j int) float64 {
	o := in.sc.Oracle
	n := float64(len(in.level1(j)))
	if in.depth2(j) {
		b := float64(o.beam())
		if o.beam() < 0 {
			b = n
		}
		n += min(b, n) * n
	}
	n = min(n, float64(o.budget()))
	if o.Screen > 0 {
		// A screened run costs about Screen/Epochs of a whole one.
		n = n*float64(o.Screen)/float64(in.sc.Epochs) + float64(o.refine())
	}
	return n + 1
}

func (in *instance) depth2(j int) bool {
	return in.sc.Oracle.depth() >= 2 && in.patterns[j].Ranks <= in.sc.Oracle.maxRanks2()
}

// level1 caches the neighbours of job j's initial pattern.
func (in *instance) level1(j int) []move {
	if in.l1 == nil {
		in.l1 = map[int][]move{}
	}
	if m, ok := in.l1[j]; ok {
		return m
	}
	m := neighbours(in.patterns[j], map[string]bool{fingerprint(in.patterns[j]): true})
	in.l1[j] = m
	return m
}

func (in *instance) objective(s Series) float64 {
	if in.sc.Oracle.Objective == "p95" {
		return s.AlgBWP95
	}
	return s.AlgBW
}

// oracle searches each tuned job in turn, the others running their
// patterns chosen so far, then runs all of them together. With screening
// on, every candidate first runs only the first Screen epochs, and the
// Refine best of them run the whole case, which decides.
func (in *instance) oracle(sim *netsim.Sim, tuned []int, base []Series, prog *progress) (*oracleResult, error) {
	n := len(in.sc.Jobs)
	res := &oracleResult{swaps: make([][]string, n), evaluated: make([]int, n), depth: make([]int, n), exhaustive: make([]bool, n)}
	choice := slices.Clone(in.patterns)
	cur := base
	o := in.sc.Oracle
	for _, j := range tuned {
		budget := o.budget()
		with := func(p *ten.Pattern) []*ten.Pattern {
			pats := slices.Clone(choice)
			pats[j] = p
			return pats
		}
		in.remember(choice, j, 0, in.objective(cur[j]))
		full := func(p *ten.Pattern) (float64, error) {
			sc, _, err := in.judge(sim, with(p), j, 0)
			return sc, err
		}
		quick := full
		if screen := o.screen(in.sc.Epochs); screen > 0 {
			quick = func(p *ten.Pattern) (float64, error) {
				sc, _, err := in.judge(sim, with(p), j, screen)
				return sc, err
			}
		}
		cut := false
		var all []move
		level := func(ms []move, prefix []transform.Swap) ([]move, error) {
			var done []move
			for _, m := range ms {
				if res.evaluated[j] >= budget {
					cut = true
					break
				}
				sc, err := quick(m.p)
				if err != nil {
					return nil, err
				}
				res.evaluated[j]++
				prog.step(1)
				m.score = sc
				m.swaps = append(slices.Clone(prefix), m.swaps...)
				done = append(done, m)
			}
			all = append(all, done...)
			return done, nil
		}
		seen := map[string]bool{fingerprint(choice[j]): true}
		l1 := in.level1(j)
		for _, m := range l1 {
			seen[fingerprint(m.p)] = true
		}
		done, err := level(l1, nil)
		if err != nil {
			return nil, err
		}
		res.depth[j] = 1
		complete := true
		if in.depth2(j) && !cut {
			res.depth[j] = 2
			sortMoves(done)
			top := done
			if b := o.beam(); b >= 0 && b < len(done) {
				top, complete = done[:b], false
			}
			for _, q := range top {
				if cut {
					break
				}
				if _, err := level(neighbours(q.p, seen), q.swaps); err != nil {
					return nil, err
				}
			}
		}
		res.exhaustive[j] = !cut && complete
		best := move{p: choice[j], score: in.objective(cur[j])}
		sortMoves(all)
		if o.screen(in.sc.Epochs) > 0 {
			// The screen ranks; whole runs decide.
			all = all[:min(len(all), o.refine())]
			for k := range all {
				if all[k].score, err = full(all[k].p); err != nil {
					return nil, err
				}
				prog.step(1)
			}
			sortMoves(all)
		}
		if len(all) > 0 && all[0].score > best.score {
			best = all[0]
		}
		if cur, err = in.adopt(sim, res, choice, cur, j, best); err != nil {
			return nil, err
		}
	}
	res.series, res.patterns = cur, choice
	return res, nil
}

// sortMoves orders by score, best first; ties keep their order.
func sortMoves(ms []move) {
	slices.SortStableFunc(ms, func(a, b move) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
}

// screen runs only the first epochs and scores job j on all of them (a
// static pattern has no warm-up).
func (in *instance) screen(sim *netsim.Sim, pats []*ten.Pattern, j, epochs int) (float64, error) {
	d := &staticDriver{pats: pats, rec: newRecorder(len(pats))}
	if err := sim.Run(in.jobs, epochs, d); err != nil {
		return 0, err
	}
	t := d.rec.times[j]
	if len(t) == 0 {
		return 0, fmt.Errorf("job %s ran no epoch", in.sc.Jobs[j].Name)
	}
	return in.objective(newSeries(t, nil, in.sc.Jobs[j].Bytes, 0)), nil
}

// judgeKey identifies a judgement: job j's score with every job running
// pats, over a whole run or a screen of its first epochs.
type judgeKey [sha256.Size]byte

func newJudgeKey(pats []*ten.Pattern, j, screen int) judgeKey {
	h := sha256.New()
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(j))
	b = binary.LittleEndian.AppendUint32(b, uint32(screen))
	for _, p := range pats {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Flows)))
		b = append(b, fingerprint(p)...)
	}
	h.Write(b)
	var k judgeKey
	h.Sum(k[:0])
	return k
}

// judge scores job j with every job running pats, over a whole run
// (screen 0) or its first screen epochs, with the case's own simulator. A
// judgement made before, by either oracle, costs nothing; fresh says
// whether this one ran a simulation.
func (in *instance) judge(sim *netsim.Sim, pats []*ten.Pattern, j, screen int) (score float64, fresh bool, err error) {
	k := newJudgeKey(pats, j, screen)
	if v, ok := in.scores[k]; ok {
		return v, false, nil
	}
	if screen > 0 {
		score, err = in.screen(sim, pats, j, screen)
	} else {
		var ser []Series
		if ser, err = in.static(sim, pats); err == nil {
			score = in.objective(ser[j])
		}
	}
	if err != nil {
		return 0, false, err
	}
	in.remember(pats, j, screen, score)
	return score, true, nil
}

// judged says whether judge would answer from memory.
func (in *instance) judged(pats []*ten.Pattern, j, screen int) bool {
	_, ok := in.scores[newJudgeKey(pats, j, screen)]
	return ok
}

func (in *instance) remember(pats []*ten.Pattern, j, screen int, score float64) {
	if in.scores == nil {
		in.scores = map[judgeKey]float64{}
	}
	in.scores[newJudgeKey(pats, j, screen)] = score
}
