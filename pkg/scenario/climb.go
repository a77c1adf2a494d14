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
	o := in.sc.Oracle
	screen := o.climbScreen(in.sc.Epochs)
	unit := 1.0 // progress per simulation
	if screen > 0 {
		unit = float64(screen) / float64(in.sc.Epochs)
	}
	for _, j := range tuned {
		with := func(p *ten.Pattern) []*ten.Pattern {
			pats := slices.Clone(choice)
			pats[j] = p
			return pats
		}
		in.remember(choice, j, 0, in.objective(cur[j]))
		cut := false
		// score judges p; ok is false once the budget is spent on a
		// pattern never judged.
		score := func(p *ten.Pattern) (sc float64, ok bool, err error) {
			pats := with(p)
			if res.evaluated[j] >= o.climbBudget() && !in.judged(pats, j, screen) {
				cut = true
				return 0, false, nil
			}
			sc, fresh, err := in.judge(sim, pats, j, screen)
			if fresh {
				res.evaluated[j]++
				prog.step(unit)
			}
			return sc, err == nil, err
		}
		var seen []move // every judged move, for the final pick
		// expand judges every neighbour of from, best first.
		expand := func(from move) ([]move, error) {
			var out []move
			for _, m := range neighbours(from.p, map[string]bool{fingerprint(from.p): true}) {
				sc, ok, err := score(m.p)
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
			seen = append(seen, out...)
			sortMoves(out)
			return out, nil
		}
		start := move{p: choice[j]}
		var err error
		if start.score, _, err = score(start.p); err != nil {
			return nil, err
		}
		first, err := expand(start)
		if err != nil {
			return nil, err
		}
		visited := map[string]bool{fingerprint(start.p): true}
		var ends []move
		for k := 0; k <= o.restarts() && k < len(first) && !cut; k++ {
			m := first[k]
			if m.score <= start.score {
				break // sorted: no other first move improves either
			}
			if visited[fingerprint(m.p)] {
				continue // an earlier climb passed here and went on from it
			}
			for !cut {
				visited[fingerprint(m.p)] = true
				next, err := expand(m)
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
		res.exhaustive[j] = !cut
		cands := seen
		if screen > 0 {
			// The screen ranks; whole runs of the Refine best and of every
			// climb's end decide.
			sortMoves(cands)
			cands = append(slices.Clone(cands[:min(len(cands), o.refine())]), ends...)
			for k := range cands {
				if cands[k].score, _, err = in.judge(sim, with(cands[k].p), j, 0); err != nil {
					return nil, err
				}
				prog.step(1)
			}
		}
		best := move{p: choice[j], score: in.objective(cur[j])}
		for _, m := range cands {
			if m.score > best.score {
				best = m
			}
		}
		res.depth[j] = len(best.swaps)
		if cur, err = in.adopt(sim, res, choice, cur, j, best); err != nil {
			return nil, err
		}
	}
	res.series, res.patterns = cur, choice
	return res, nil
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
