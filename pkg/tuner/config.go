package tuner

import "fmt"

// Config holds every parameter of the feedback loop (Table 3 of the paper).
// DefaultConfig gives the paper's values; the fields the paper leaves open
// (KtGrowth, AMax) have defaults chosen here and say so.
//
// The JSON names are every reader's spelling of a setting: libreact's
// config_json, react_torch's configure() and REACT_ variables, react
// replay's flags and scenario files' tuner blocks (Settings, Override).
// The help tags are the one line those readers show.
type Config struct {
	// Model chooses the judge of candidate patterns and the loop around it:
	// ModelReact (the default) or ModelPaper, the paper's Algorithm 1 with
	// its pair-history estimate (§5.4.1), kept for comparison.
	Model string `json:"Model" help:"the tuner's loop: react (a link model learned from the FCTs judges whole patterns) or paper (the paper's Algorithm 1)"`
	// B is the batch size: the tuner decides after every B epochs run with
	// the pattern in force.
	B int `json:"B" help:"epochs per batch"`
	// Delta1: a flow is steady-congested when its p90 throughput falls
	// below (1-Delta1) of the mean throughput of flows of its degree.
	Delta1 float64 `json:"Delta1" help:"paper: steady congestion threshold"`
	// Delta2: a flow is erratic-congested when the normalised standard
	// deviation of its throughput over the batch exceeds Delta2.
	Delta2 float64 `json:"Delta2" help:"paper: erratic congestion threshold"`
	// Kt is the number of transforms tried (estimated with the model) in a
	// batch's exploration.
	Kt int `json:"Kt" help:"paper: transforms tried per batch"`
	// KtGrowth is added to Kt after every exploring batch that kept no
	// change, so that the search widens (the paper grows K_t without saying
	// by how much); it resets when a change is kept.
	KtGrowth int `json:"KtGrowth" help:"paper: added to Kt after a fruitless batch"`
	// Epsilon: a transform is accepted only when the model's mean time over
	// the batch's critical paths improves by a factor of at least 1+Epsilon.
	Epsilon float64 `json:"Epsilon" help:"paper: minimum estimated gain of a transform"`
	// H: observations older than H epochs are forgotten.
	H int `json:"H" help:"epochs of FCT history kept"`
	// EMax: after EMax exploring batches in a row without a kept
	// improvement the tuner stops exploring; after EMax*B epochs without
	// exploring it explores again, so as not to stay in a local optimum.
	EMax int `json:"EMax" help:"paper: fruitless batches before exploration stops"`
	// AMax bounds the transforms accepted in one batch (Algorithm 1's
	// K_max; the paper's "maximum exploration attempts"); the default 4
	// keeps each change small enough to revert as a whole.
	AMax int `json:"AMax" help:"swaps in one change"`
	// TauR: a change is kept only when the observed collective time of its
	// first batch beats the previous batch's by a factor of 1+TauR;
	// otherwise the previous pattern is restored.
	TauR float64 `json:"TauR" help:"paper: observed gain needed to keep a change"`
	// Lag is the number of epochs between a decision and the epoch at which
	// every rank switches to its pattern.
	Lag int `json:"Lag" help:"epochs between a decision and the switch"`
	// Seed drives the random choice among equally ranked transforms.
	Seed uint64 `json:"Seed" help:"tuner's random seed"`

	// MinGain (Model "react"): a change is proposed only when the link
	// model predicts at least this speed-up (beside what the times' spread
	// and earlier misses demand). It plays Epsilon's part; Delta1, Delta2,
	// Kt, KtGrowth, Epsilon, EMax and TauR are the paper loop's alone.
	MinGain float64 `json:"MinGain" help:"react: minimum predicted speed-up of a change"`
	// Stepped (Model "react") tells the link model how the executor ran:
	// each rank's steps one after another, an FCT timed from the receiver's
	// step start (react_torch's executor before its dataflow one: the
	// testbed logs cmd/react replays), rather than as data allows with an
	// FCT from the flow's own start (react_torch's dataflow executor, the
	// simulator).
	Stepped bool `json:"Stepped" help:"react: the FCTs come from a step-by-step executor (react_torch's before its dataflow one)"`
	// OneHost (Model "react"): every rank of the pattern runs on one host,
	// so no flow crosses a shared fabric (ECMP paths, switch links): a pair
	// that stands out there is a busy CPU or the host's own copy path, and
	// the pair history's trials (the fabric fallback) are off.
	OneHost bool `json:"OneHost" help:"react: every rank runs on one host (no fabric): the pair history's trials are off"`
	// Confidence (Model "react"): a change is kept when its gain is
	// significant at this one-sided level (Welch's t-test on the collective
	// times before and after it).
	Confidence float64 `json:"Confidence" help:"react: one-sided level at which a change's observed gain must be significant to keep it"`
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

// ReadsStepped says whether the tuner reads an FCT from its receiver's
// step start (Stepped, Model "react"); the paper's loop, and the link
// model otherwise, read a flow's own duration.
func (c Config) ReadsStepped() bool { return c.Stepped && c.Model == ModelReact }
