package scenario

import (
	"fmt"

	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
)

// Decision is a batch of the tuner that changed something.
type Decision struct {
	Batch     int      `json:"batch"`
	Epoch     int      `json:"epoch"`
	Observed  float64  `json:"observed"` // mean collective time of the batch, s
	Kept      bool     `json:"kept,omitempty"`
	Reverted  bool     `json:"reverted,omitempty"`
	Effective int      `json:"effective,omitempty"` // epoch the new pattern runs from
	Swaps     []string `json:"swaps,omitempty"`     // transforms accepted into it
	// Predicted is the tuner's model's speed-up of the new pattern on the
	// batch's critical paths (first accepted trial's before over the last
	// one's after).
	Predicted float64 `json:"predicted,omitempty"`
}

// reactDriver runs a tuner in the loop for every tuned job, as the runtime
// does: the tuner names each epoch's pattern and gets each epoch's FCTs.
type reactDriver struct {
	static []*ten.Pattern
	tuners []*tuner.Tuner
	rec    *recorder
	noise  *noise // nil: the tuner sees the simulator's times
	err    error

	changes, kept, reverted []int
	decisions               [][]Decision
}

func (d *reactDriver) Pattern(job, epoch int) *ten.Pattern {
	if d.err != nil {
		return nil
	}
	if tu := d.tuners[job]; tu != nil {
		p, _ := tu.Pattern(epoch)
		return p
	}
	return d.static[job]
}

// minFCT stands in for a zero FCT (a flow of no bytes on a link of no
// latency), which the tuner refuses.
const minFCT = 1e-12

func (d *reactDriver) Done(r netsim.EpochResult) {
	d.rec.record(r)
	tu := d.tuners[r.Job]
	if tu == nil || d.err != nil {
		return
	}
	fct := railFCTs(r)
	for i := range fct {
		fct[i] = max(fct[i], minFCT)
	}
	elapsed := r.Elapsed
	if d.noise != nil {
		elapsed = d.noise.apply(r.Job, r.Epoch, r.Pattern, fct, elapsed)
	}
	dec, err := tu.Observe(r.Epoch, fct, elapsed)
	if err != nil {
		d.err = fmt.Errorf("job %d epoch %d: %w", r.Job, r.Epoch, err)
		return
	}
	if dec == nil || (dec.Pattern == nil && !dec.Kept && !dec.Reverted) {
		return
	}
	j := r.Job
	log := Decision{Batch: dec.Batch, Epoch: dec.Epoch, Observed: dec.Observed, Kept: dec.Kept, Reverted: dec.Reverted}
	if dec.Kept {
		d.kept[j]++
	}
	if dec.Reverted {
		d.reverted[j]++
	}
	if dec.Pattern != nil {
		d.changes[j]++
		log.Effective = dec.Effective
		before, after := 0.0, 0.0
		for _, t := range dec.Trials {
			if t.Accepted {
				log.Swaps = append(log.Swaps, t.Swap.String())
				if before == 0 {
					before = t.Before
				}
				after = t.After
			}
		}
		if after > 0 {
			log.Predicted = before / after
		}
	}
	d.decisions[j] = append(d.decisions[j], log)
}

type reactResult struct {
	series                  []Series
	changes, kept, reverted []int
	decisions               [][]Decision
}

// react runs the tuned jobs with tuners of spec's settings in the loop.
func (in *instance) react(sim *netsim.Sim, tuned []int, spec TunerSpec) (*reactResult, error) {
	n := len(in.sc.Jobs)
	d := &reactDriver{static: in.patterns, tuners: make([]*tuner.Tuner, n), rec: newRecorder(n), noise: newNoise(in.sc.Noise, in.seed, n),
		changes: make([]int, n), kept: make([]int, n), reverted: make([]int, n), decisions: make([][]Decision, n)}
	seeds := caseRand(in.seed, streamTuner)
	for _, j := range tuned {
		cfg, err := spec.config(seeds.Uint64() + uint64(j))
		if err != nil {
			return nil, err // checked in Decode
		}
		// The tuner sees one rail: its flows carry 1/L of the bytes.
		tu, err := tuner.New(cfg, in.patterns[j], in.sc.Jobs[j].Bytes/float64(in.sc.Topology.gpus()))
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", in.sc.Jobs[j].Name, err)
		}
		d.tuners[j] = tu
	}
	if err := sim.Run(in.jobs, in.sc.Epochs, d); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	ser, err := in.series(d.rec)
	if err != nil {
		return nil, err
	}
	return &reactResult{ser, d.changes, d.kept, d.reverted, d.decisions}, nil
}
