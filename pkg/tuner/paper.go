package tuner

import (
	"fmt"
	"slices"

	"github.com/react-torch/react-torch/pkg/detect"
	"github.com/react-torch/react-torch/pkg/model"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
)

// loop is one of the tuner's feedback loops (Config.Model): what it learns
// from every epoch and how it ends a batch. The Tuner around it owns the
// pattern in force, the batch, the switch and the patterns never to try
// again.
type loop interface {
	// observe takes one epoch's FCTs of the pattern in force (validated).
	observe(epoch int, fct []float64) error
	// waiting takes the collective time and the FCTs' critical path of an
	// epoch that still ran the old pattern while a switch was pending.
	waiting(elapsed, path float64)
	// decide ends a batch (the Tuner's batch and elapsed times).
	decide(epoch int) *Decision
	// report adds what the loop knows of the network.
	report(r *Report)
}

// paperLoop is Model "paper": the paper's Algorithm 1 (§5.4), detection,
// trials judged by the pair history and a revert after a batch by TauR.
type paperLoop struct {
	*Tuner
	hist *model.History // the pair history (§5.4.1)
	// the change under evaluation: the pattern before it and that
	// pattern's observed time
	prev     *ten.Pattern
	prevTime float64
	steps    []string       // fingerprints of the change's patterns, one per accepted swap
	resolved map[int32]bool // steady ranks moved off the critical path by a kept change

	noGain  int // exploring batches in a row without a kept improvement
	idle    int // epochs since the last exploration, while stopped
	ktBonus int
}

func (t *paperLoop) observe(epoch int, fct []float64) error {
	return t.hist.Observe(epoch, t.cur, t.deg, fct, t.bytes)
}

func (t *paperLoop) waiting(float64, float64) {}

func (t *paperLoop) decide(epoch int) *Decision {
	d := &Decision{Batch: t.batchNo, Epoch: epoch, Version: t.version, Observed: mean(t.elapsed)}
	if t.prev != nil {
		d.Previous = t.prevTime
		if t.prevTime >= (1+t.cfg.TauR)*d.Observed {
			d.Kept = true
			t.noGain, t.ktBonus = 0, 0
		} else {
			d.Reverted = true
			t.rejected[fingerprint(t.cur)] = true
			for _, fp := range t.steps {
				t.rejected[fp] = true
			}
			t.resolved = map[int32]bool{}
			t.noGain++
			t.emit(d, t.prev, epoch)
			t.prev = nil
			return d
		}
		t.prev = nil
	}
	if t.noGain >= t.cfg.EMax {
		t.idle += t.cfg.B
		if t.idle < t.cfg.EMax*t.cfg.B {
			d.Note = "exploration stopped after EMax batches without gain"
			return d
		}
		t.noGain, t.idle, t.ktBonus = 0, 0, 0
	}
	rep, err := detect.Detect(t.cur, t.deg, t.batch, t.bytes, detect.Config{Delta1: t.cfg.Delta1, Delta2: t.cfg.Delta2})
	if err != nil { // inputs were validated in Observe; a failure here is a bug
		panic(err)
	}
	for i, c := range rep.Class {
		if c != detect.None {
			d.Congested = append(d.Congested, FlowClass{i, c})
		}
	}
	if !rep.Congested() {
		d.Note = "no congestion detected"
		return d
	}
	d.Explored = true
	g, trials, steps := t.explore(rep)
	d.Trials = trials
	if g == nil || slices.Equal(g.Flows, t.cur.Flows) || t.rejected[fingerprint(g)] {
		t.noGain++
		t.ktBonus += t.cfg.KtGrowth
		return d
	}
	if err := semantics.Check(g); err != nil { // only a hash collision in the position evaluator gets here
		d.Note = fmt.Sprintf("explored pattern refused by the semantics check: %v", err)
		t.rejected[fingerprint(g)] = true
		return d
	}
	t.prev, t.prevTime, t.steps = t.cur, d.Observed, steps
	t.emit(d, g, epoch)
	return d
}
