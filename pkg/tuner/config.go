package tuner

import "fmt"

// Config holds every parameter of the feedback loop (Table 3 of the paper).
// DefaultConfig gives the paper's values; the fields the paper leaves open
// (KtGrowth, AMax) have defaults chosen here and say so.
type Config struct {
	// Model chooses the judge of candidate patterns and the loop around it:
	// ModelReact (the default) or ModelPaper, the paper's Algorithm 1 with
	// its pair-history estimate (§5.4.1), kept for comparison.
	Model string
	// B is the batch size: the tuner decides after every B epochs run with
	// the pattern in force.
	B int
	// Delta1: a flow is steady-congested when its p90 throughput falls
	// below (1-Delta1) of the mean throughput of flows of its degree.
	Delta1 float64
	// Delta2: a flow is erratic-congested when the normalised standard
	// deviation of its throughput over the batch exceeds Delta2.
	Delta2 float64
	// Kt is the number of transforms tried (estimated with the model) in a
	// batch's exploration.
	Kt int
	// KtGrowth is added to Kt after every exploring batch that kept no
	// change, so that the search widens (the paper grows K_t without saying
	// by how much); it resets when a change is kept.
	KtGrowth int
	// Epsilon: a transform is accepted only when the model's mean time over
	// the batch's critical paths improves by a factor of at least 1+Epsilon.
	Epsilon float64
	// H: observations older than H epochs are forgotten.
	H int
	// EMax: after EMax exploring batches in a row without a kept
	// improvement the tuner stops exploring; after EMax*B epochs without
	// exploring it explores again, so as not to stay in a local optimum.
	EMax int
	// AMax bounds the transforms accepted in one batch (Algorithm 1's
	// K_max; the paper's "maximum exploration attempts"); the default 4
	// keeps each change small enough to revert as a whole.
	AMax int
	// TauR: a change is kept only when the observed collective time of its
	// first batch beats the previous batch's by a factor of 1+TauR;
	// otherwise the previous pattern is restored.
	TauR float64
	// Lag is the number of epochs between a decision and the epoch at which
	// every rank switches to its pattern.
	Lag int
	// Seed drives the random choice among equally ranked transforms.
	Seed uint64

	// MinGain (Model "react"): a change is proposed only when the link
	// model predicts at least this speed-up (beside what the batch's spread
	// and earlier misses demand). It plays Epsilon's part; Delta1, Delta2,
	// Kt, KtGrowth, Epsilon, EMax and TauR are the paper loop's alone.
	MinGain float64
	// Stepped (Model "react") tells the link model how the executor runs:
	// each rank's steps one after another, an FCT timed from the receiver's
	// step start (react_torch's executor), rather than as data allows with
	// an FCT from the flow's own start (NCCL-like channels, the simulator).
	Stepped bool
	// Confidence (Model "react"): a change is kept when its gain is
	// significant at this one-sided level (Welch's t-test on the collective
	// times before and after it).
	Confidence float64
}

// The values of Config.Model.
const (
	ModelReact = "react"
	ModelPaper = "paper"
)

// DefaultConfig returns the paper's parameters (§5.4, §6.3, Table 3).
func DefaultConfig() Config {
	return Config{Model: ModelReact, B: 6, Delta1: 0.2, Delta2: 0.15, Kt: 15, KtGrowth: 5, Epsilon: 0.05, H: 60, EMax: 5, AMax: 4, TauR: 0.05, Lag: 5, Seed: 1, MinGain: 0.01, Confidence: 0.95}
}

// Validate names the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.Model != ModelReact && c.Model != ModelPaper:
		return fmt.Errorf("tuner config: Model = %q, want %q or %q", c.Model, ModelReact, ModelPaper)
	case c.B < 1:
		return fmt.Errorf("tuner config: B = %d, want >= 1", c.B)
	case !(c.Delta1 >= 0 && c.Delta1 < 1):
		return fmt.Errorf("tuner config: Delta1 = %v, want in [0, 1)", c.Delta1)
	case !(c.Delta2 >= 0):
		return fmt.Errorf("tuner config: Delta2 = %v, want >= 0", c.Delta2)
	case c.Kt < 1:
		return fmt.Errorf("tuner config: Kt = %d, want >= 1", c.Kt)
	case c.KtGrowth < 0:
		return fmt.Errorf("tuner config: KtGrowth = %d, want >= 0", c.KtGrowth)
	case !(c.Epsilon >= 0):
		return fmt.Errorf("tuner config: Epsilon = %v, want >= 0", c.Epsilon)
	case c.H < c.B:
		return fmt.Errorf("tuner config: H = %d, want >= B (%d)", c.H, c.B)
	case c.EMax < 1:
		return fmt.Errorf("tuner config: EMax = %d, want >= 1", c.EMax)
	case c.AMax < 1:
		return fmt.Errorf("tuner config: AMax = %d, want >= 1", c.AMax)
	case !(c.TauR >= 0):
		return fmt.Errorf("tuner config: TauR = %v, want >= 0", c.TauR)
	case !(c.MinGain >= 0):
		return fmt.Errorf("tuner config: MinGain = %v, want >= 0", c.MinGain)
	case !(c.Confidence > 0.5 && c.Confidence < 1):
		return fmt.Errorf("tuner config: Confidence = %v, want in (0.5, 1)", c.Confidence)
	case c.Lag < 1:
		return fmt.Errorf("tuner config: Lag = %d, want >= 1", c.Lag)
	}
	return nil
}
