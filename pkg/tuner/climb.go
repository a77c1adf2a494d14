package tuner

import (
	"cmp"
	"iter"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

// maxSwaps bounds the swaps of one change. The paper keeps changes small
// (AMax) because its estimate is poor; the link model's judgement of the
// whole pattern lets the climb go on to the top of its hill.
const maxSwaps = 16

// judgeBudget bounds the work of one search, in flows replayed: every
// candidate of an 8-rank tree, about 600 of a 64-rank one, a few dozen
// at 1024 ranks, where a decision must stay under a second.
const judgeBudget = 150_000

// screenBudget bounds the candidates one search lists (and screens, in a
// large neighbourhood), in flows of the patterns: several neighbourhoods of
// a 64-rank tree, a few hundred candidates at 1024 ranks.
const screenBudget = 2_000_000

// screenPerClimb bounds what one neighbourhood screens, in flows: every
// candidate at 8 ranks, those of the suspects and then some at 64, so that
// the budget lasts for the climb's later steps.
const screenPerClimb = 300_000

// replayAll is the largest neighbourhood, in flows of all its candidates,
// that the replay judges whole: every neighbourhood of an 8-rank tree.
// The quick estimate ranks the replay's best candidate among its first
// dozen only about 60% of the time on fig5-tree, and judging a shortlist
// there costs about 4 points of the oracle's gain.
const replayAll = 6000

// shortlist is how many candidates of a screened neighbourhood, the best
// by the quick estimate, the replay judges beyond the keep asked for.
const shortlist = 16

// restarts is how many of the best first swaps the climb starts from: a
// greedy climb stops on the first hilltop, and the model's judgements are
// cheap beside a batch of the collective.
const restarts = 4

// node is a pattern on the climb, with its predicted time and the path to
// it.
type node struct {
	p      *ten.Pattern
	t      float64
	trials []Trial
	steps  []string
}

// search is one decision's climb: the judge, the suspects, the judgements
// made so far (by endpoints, printer's, -1 for a pattern the check refused)
// and the work spent.
type search struct {
	t         *Tuner
	pr        *links.Predictor
	suspects  []int32
	judged    map[string]float64
	fp        printer
	evaluated int
	work      int // flows replayed
	screened  int // flows estimated
}

// neighbours returns up to keep patterns one swap from n, the fastest
// first, that the model predicts faster than n by at least a part in a
// thousand. A small neighbourhood is judged whole by the replay; a large
// one (more than replayAll flows in all) is screened by the quick estimate
// within screenBudget, and the shortlist best by it are replayed.
func (sr *search) neighbours(n node, keep int) []node {
	dagOf := sr.dags(n.p)
	cs, screen := sr.screen(n.p, dagOf)
	var out []node
	listed := 0
	var q ten.Pattern // scratch: a candidate is copied out only to be kept
	for _, c := range cs {
		if (screen && listed >= shortlist+keep) || sr.work >= judgeBudget {
			break
		}
		transform.ApplyInto(&q, n.p, c.s)
		key := sr.fp.endpoints(&q)
		if len(sr.t.rejected) > 0 && sr.t.rejected[string(sr.fp.sum())] {
			continue
		}
		v, ok := sr.judged[string(key)]
		if !ok {
			listed++
			v = sr.judge(&q, c, screen, dagOf)
			sr.judged[string(key)] = v
		}
		if v < 0 || v >= n.t*(1-1e-3) {
			continue
		}
		i, _ := slices.BinarySearchFunc(out, v, func(a node, t float64) int { return cmp.Compare(a.t, t) })
		if i < keep {
			next := node{p: q.Clone(), t: v, trials: append(slices.Clip(n.trials), Trial{Swap: c.s, Before: n.t, After: v, Accepted: true}),
				steps: append(slices.Clip(n.steps), string(sr.fp.sum()))}
			out = slices.Insert(out, i, next)
			if len(out) > keep {
				out = out[:keep]
			}
		}
	}
	return out
}

// cand is a swap of a neighbourhood, with its candidate's DAG and quick
// estimate where the neighbourhood was screened.
type cand struct {
	s   transform.Swap
	dag *critpath.DAG
	est float64
}

// dags returns how a candidate q = s(p) gets its DAG: a relabelling within
// chunks keeps every dependency of p's, and the stepped replay needs none.
func (sr *search) dags(p *ten.Pattern) func(s transform.Swap, q *ten.Pattern) *critpath.DAG {
	stepped := sr.pr.Net().Stepped
	var pdag *critpath.DAG
	if !stepped {
		pdag = critpath.New(p)
	}
	return func(s transform.Swap, q *ten.Pattern) *critpath.DAG {
		switch {
		case stepped:
			return nil
		case s.Kind == transform.Position:
			return critpath.New(q)
		}
		return pdag
	}
}

// screen lists p's candidates within this neighbourhood's share of
// screenBudget and, where they are too many to replay whole, sorts them
// by the quick estimate (screen true).
func (sr *search) screen(p *ten.Pattern, dagOf func(transform.Swap, *ten.Pattern) *critpath.DAG) ([]cand, bool) {
	flows := len(p.Flows)
	limit := min(screenBudget, sr.screened+screenPerClimb)
	var cs []cand
	for s := range candidates(p, sr.suspects) {
		if sr.screened >= limit {
			break
		}
		sr.screened += flows
		cs = append(cs, cand{s: s})
	}
	screen := len(cs)*flows > replayAll
	if screen {
		var q ten.Pattern
		for i := range cs {
			transform.ApplyInto(&q, p, cs[i].s)
			cs[i].dag = dagOf(cs[i].s, &q)
			cs[i].est = sr.pr.Estimate(&q, cs[i].dag, sr.t.bytes)
		}
		slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(a.est, b.est) })
	}
	return cs, screen
}

// judge is the replay's time of candidate q (c's swap applied), -1 where
// the semantics check refuses it.
func (sr *search) judge(q *ten.Pattern, c cand, screen bool, dagOf func(transform.Swap, *ten.Pattern) *critpath.DAG) float64 {
	if c.s.Kind != transform.Position && semantics.Check(q) != nil {
		return -1
	}
	sr.evaluated++
	sr.work += len(q.Flows)
	dag := c.dag
	if dag == nil && !screen {
		dag = dagOf(c.s, q)
	}
	return sr.pr.Time(q, dag, sr.t.bytes)
}

// climb walks from the pattern in force to the best pattern the model
// predicts: from each of the best few first swaps, one swap at a time to
// the best neighbour, judging every viable transform (those that move the
// most congested ranks first, within judgeBudget). A swap after the first
// is taken only when it alone is predicted to gain stepGain. On the
// testbed a fit 30% off added swaps of 2% and 17% to one of 17%, and the
// three gained 1.07-1.37x where that one alone gained 1.32-1.59x; on
// fig5-tree (fits 5-10% off) steps of a few percent are real, and refusing
// those below half the miss cost 8 points of the oracle's gain. It returns
// the best end pattern (nil when no swap helps), its predicted time, the
// swaps taken, their fingerprints and how many candidates it judged.
func (t *Tuner) climb(pr *links.Predictor, now, stepGain float64) (*ten.Pattern, float64, []Trial, []string, int) {
	sr := &search{t: t, pr: pr, suspects: bySeverity(pr), judged: map[string]float64{}}
	sr.judged[string(sr.fp.endpoints(t.cur))] = now
	best := node{p: t.cur, t: now}
	for _, n := range sr.neighbours(best, restarts) {
		for len(n.trials) < maxSwaps && sr.work < judgeBudget {
			next := sr.neighbours(n, 1)
			if len(next) == 0 || n.t < next[0].t*(1+stepGain) {
				break
			}
			n = next[0]
		}
		if n.t < best.t {
			best = n
		}
	}
	if best.p == t.cur {
		return nil, now, nil, nil, sr.evaluated
	}
	return best.p, best.t, best.trials, best.steps, sr.evaluated
}

// bySeverity lists the suspect ranks, the most congested first: by their
// competing counts plus the log factors of their slow pairs.
func bySeverity(pr *links.Predictor) []int32 {
	sus := pr.Suspects()
	net := pr.Net()
	sev := make(map[int32]float64, len(sus))
	for _, r := range sus {
		sev[r] = net.Load(int(r), false) + net.Load(int(r), true)
	}
	for _, p := range pr.Pairs() {
		sev[p.Src] += math.Log(p.Factor)
		sev[p.Dst] += math.Log(p.Factor)
	}
	slices.SortStableFunc(sus, func(a, b int32) int { return cmp.Compare(sev[b], sev[a]) })
	return sus
}

// candidates yields every transform of the three kinds, those that move
// the suspect ranks first (suspect by suspect in the order given), then
// those among the other ranks, which change what runs concurrently with the
// suspects' flows: for each rank, position swaps of its vertices with their
// partners, then chunk-local and global swaps with every rank not listed
// before it. It is lazy: at 1024 ranks the whole list has millions of
// swaps and the search's budget takes a few dozen.
func candidates(p *ten.Pattern, suspects []int32) iter.Seq[transform.Swap] {
	return func(yield func(transform.Swap) bool) {
		done := make([]bool, p.Ranks)
		chunks := p.Chunks()
		pos := transform.NewPositions(p)
		order := slices.Clone(suspects)
		for x := 0; x < p.Ranks; x++ {
			if !slices.Contains(suspects, int32(x)) {
				order = append(order, int32(x))
			}
		}
		for _, x := range order {
			for c := 0; c < chunks; c++ {
				for _, v := range pos.Occupied(c) {
					if v.Rank != x {
						continue
					}
					for _, w := range pos.Partners(v) {
						if !done[w.Rank] && !yield(transform.PositionSwap(v, w)) {
							return
						}
					}
				}
			}
			for y := 0; y < p.Ranks; y++ {
				if int32(y) == x || done[y] {
					continue
				}
				if chunks > 1 {
					for c := 0; c < chunks; c++ {
						if !yield(transform.ChunkSwap(c, int(x), y)) {
							return
						}
					}
				}
				if !yield(transform.GlobalSwap(int(x), y)) {
					return
				}
			}
			done[x] = true
		}
	}
}
