package scenario

import (
	"slices"

	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/ten"
)

// The climbing oracle is the stronger yardstick: the depth search sees
// only patterns one or two transforms away, while the tuner keeps adding
// transforms batch after batch, so a tuner can beat it and "share" can
// pass 100% for the wrong reason. The climb follows the steepest ascent
// (every valid transform of the three kinds judged by the case's own
// simulator, the best improving one taken) until no transform improves,
// from the best first move and from the Restarts next-best ones. It is a
// local optimum, not a bound either, but one no single transform improves.

// climb runs the climbing oracle for each tuned job in turn, the others
// running the patterns it chose for them so far, like the depth search.
func (in *instance) climb(sim *netsim.Sim, tuned []int, base []Series, prog *progress) (*oracleResult, error) {
	n := len(in.sc.Jobs)
	res := &oracleResult{swaps: make([][]string, n), evaluated: make([]int, n), depth: make([]int, n), exhaustive: make([]bool, n)}
	choice := slices.Clone(in.patterns)
	cur := base
	screen := in.sc.Oracle.climbScreen(in.sc.Epochs)
	unit := 1.0 // progress per simulation
	if screen > 0 {
		unit = float64(screen) / float64(in.sc.Epochs)
	}
	for _, j := range tuned {
		in.remember(choice, j, 0, in.objective(cur[j]))
		jc := &jobClimb{in: in, sim: sim, res: res, prog: prog, choice: choice, j: j, screen: screen, unit: unit}
		best, err := jc.run(in.objective(cur[j]))
		if err != nil {
			return nil, err
		}
		res.exhaustive[j] = !jc.cut
		res.depth[j] = len(best.swaps)
		if cur, err = in.adopt(sim, res, choice, cur, j, best); err != nil {
			return nil, err
		}
	}
	res.series, res.patterns = cur, choice
	return res, nil
}

// jobClimb is the climb of one tuned job j, the other jobs running
// choice: what it judged (seen) and whether the budget cut it short.
type jobClimb struct {
	in     *instance
	sim    *netsim.Sim
	res    *oracleResult
	prog   *progress
	choice []*ten.Pattern
	j      int
	screen int     // epochs a screening simulation runs (0: whole runs)
	unit   float64 // progress per simulation
	cut    bool
	seen   []move // every judged move, for the final pick
}

// with is choice with job j running p.
func (jc *jobClimb) with(p *ten.Pattern) []*ten.Pattern {
	pats := slices.Clone(jc.choice)
	pats[jc.j] = p
	return pats
}

// score judges p; ok is false once the budget is spent on a pattern never
// judged.
func (jc *jobClimb) score(p *ten.Pattern) (sc float64, ok bool, err error) {
	pats := jc.with(p)
	if jc.res.evaluated[jc.j] >= jc.in.sc.Oracle.climbBudget() && !jc.in.judged(pats, jc.j, jc.screen) {
		jc.cut = true
		return 0, false, nil
	}
	sc, fresh, err := jc.in.judge(jc.sim, pats, jc.j, jc.screen)
	if fresh {
		jc.res.evaluated[jc.j]++
		jc.prog.step(jc.unit)
	}
	return sc, err == nil, err
}

// expand judges every neighbour of from, best first.
func (jc *jobClimb) expand(from move) ([]move, error) {
	var out []move
	for _, m := range neighbours(from.p, map[string]bool{fingerprint(from.p): true}) {
		sc, ok, err := jc.score(m.p)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		m.score = sc
		m.swaps = append(slices.Clone(from.swaps), m.swaps...)
		out = append(out, m)
	}
	jc.seen = append(jc.seen, out...)
	sortMoves(out)
	return out, nil
}

// run climbs from job j's pattern in choice, whose objective is now, and
// returns the best move it found (the pattern itself where none beats
// it).
func (jc *jobClimb) run(now float64) (move, error) {
	start := move{p: jc.choice[jc.j]}
	var err error
	if start.score, _, err = jc.score(start.p); err != nil {
		return move{}, err
	}
	first, err := jc.expand(start)
	if err != nil {
		return move{}, err
	}
	ends, err := jc.ascend(start, first)
	if err != nil {
		return move{}, err
	}
	cands := jc.seen
	if jc.screen > 0 {
		// The screen ranks; whole runs of the Refine best and of every
		// climb's end decide.
		sortMoves(cands)
		cands = append(slices.Clone(cands[:min(len(cands), jc.in.sc.Oracle.refine())]), ends...)
		for k := range cands {
			if cands[k].score, _, err = jc.in.judge(jc.sim, jc.with(cands[k].p), jc.j, 0); err != nil {
				return move{}, err
			}
			jc.prog.step(1)
		}
	}
	best := move{p: jc.choice[jc.j], score: now}
	for _, m := range cands {
		if m.score > best.score {
			best = m
		}
	}
	return best, nil
}

// ascend follows the steepest ascent from each of the best first moves
// (the best and Restarts more, those that improve on start) and returns
// where each climb ended.
func (jc *jobClimb) ascend(start move, first []move) ([]move, error) {
	visited := map[string]bool{fingerprint(start.p): true}
	var ends []move
	for k := 0; k <= jc.in.sc.Oracle.restarts() && k < len(first) && !jc.cut; k++ {
		m := first[k]
		if m.score <= start.score {
			break // sorted: no other first move improves either
		}
		if visited[fingerprint(m.p)] {
			continue // an earlier climb passed here and went on from it
		}
		for !jc.cut {
			visited[fingerprint(m.p)] = true
			next, err := jc.expand(m)
			if err != nil {
				return nil, err
			}
			if len(next) == 0 || next[0].score <= m.score {
				break
			}
			m = next[0]
		}
		ends = append(ends, m)
	}
	return ends, nil
}

// climbEstimate is about the number of simulations the climb adds for job
// j, for the progress bar: the depth search has judged its first two
// levels, so about two more levels per climb.
func (in *instance) climbEstimate(j int) float64 {
	o := in.sc.Oracle
	n := min(float64(2*(1+o.restarts())*len(in.level1(j))), float64(o.climbBudget()))
	if s := o.climbScreen(in.sc.Epochs); s > 0 {
		n = n*float64(s)/float64(in.sc.Epochs) + float64(o.refine()+1+o.restarts())
	}
	return n
}
