package tuner_test

// Tuner scenarios as text files, in the manner of etcd-io/raft: each file
// in testdata/ is a script of commands with the output expected after each
// "----". Run `go test ./pkg/tuner -run TestDataDriven -rewrite` to
// rewrite the expected output after a deliberate change, and read the diff.
//
//	pattern op=allreduce algo=tree ranks=8 bytes=20e6 Model=paper [root=R] [B=6 Lag=5 Seed=1 KtGrowth=7 ...]
//	    a new tuner at epoch 0 on the generated pattern, with DefaultConfig
//	    and the settings given by their JSON names (Config.Set); Model= is
//	    required, so that every file says which judge it holds to. Clears
//	    congestion and noise.
//	congest rank=3 dir=in|out|both factor=2 [from=30] [to=80]
//	    from epoch from (default 0) until before epoch to (default never),
//	    flows into (out of, or both) rank 3 take factor times as long.
//	    Congestion belongs to the rank, so it stays put when a swap moves
//	    the rank's roles.
//	stall epoch=12 factor=3
//	    every flow of epoch 12 takes 3 times as long (a host's hiccup:
//	    one slow epoch, no congestion).
//	noise sigma=0.1 seed=3
//	    every FCT is multiplied by an independent lognormal factor (median
//	    1); sigma=0 removes the noise.
//	run epochs=60
//	    runs the next epochs; prints a line for each decision that changed
//	    something (a change, a keep or a revert) and one with the counts.
//
// FCTs are fixture.FCTs (Alpha plus bytes at Rate shared by the flow's
// degree) times the active congestion and noise factors.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
)

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &scenario{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.exec(d)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return out
		})
	})
}

// congestion is one congest command: factor on flows into and/or out of
// rank in epochs [from, to).
type congestion struct {
	from, to int
	factor   fixture.Factor
}

// scenario is the state of one file: the tuner, the environment the
// epochs run in, and the next epoch to run.
type scenario struct {
	tu      *tuner.Tuner
	bytes   float64
	epoch   int
	congest []congestion
	noise   fixture.Factor
}

func (s *scenario) exec(d *datadriven.TestData) (string, error) {
	args := map[string]string{}
	for _, a := range d.CmdArgs {
		if len(a.Vals) != 1 {
			return "", fmt.Errorf("%s: want key=value", a.Key)
		}
		args[a.Key] = a.Vals[0]
	}
	if d.Cmd != "pattern" && s.tu == nil {
		return "", fmt.Errorf("%s before pattern", d.Cmd)
	}
	switch d.Cmd {
	case "pattern":
		return s.pattern(args)
	case "congest":
		return s.congestion(args)
	case "noise":
		var sigma float64
		var seed uint64
		if err := scan(args, map[string]any{"sigma": &sigma, "seed": &seed}, "sigma", "seed"); err != nil {
			return "", err
		}
		s.noise = nil
		if sigma > 0 {
			s.noise = fixture.Noise(sigma, seed)
		}
		return "ok", nil
	case "stall":
		var e int
		var f float64
		if err := scan(args, map[string]any{"epoch": &e, "factor": &f}, "epoch", "factor"); err != nil {
			return "", err
		}
		if !(f > 0) || e < 0 {
			return "", fmt.Errorf("stall epoch=%d factor=%v: want epoch >= 0 and factor > 0", e, f)
		}
		s.congest = append(s.congest, congestion{from: e, to: e + 1, factor: func(int, ten.Flow) float64 { return f }})
		return "ok", nil
	case "run":
		var epochs int
		if err := scan(args, map[string]any{"epochs": &epochs}, "epochs"); err != nil {
			return "", err
		}
		return s.run(epochs)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func (s *scenario) pattern(args map[string]string) (string, error) {
	var opName, algo string
	var ranks int
	root := -1
	dests := map[string]any{"op": &opName, "algo": &algo, "ranks": &ranks, "root": &root, "bytes": &s.bytes}
	if _, ok := args["Model"]; !ok {
		return "", fmt.Errorf("missing Model=")
	}
	cfg := tuner.DefaultConfig()
	for k, v := range args {
		if _, ok := dests[k]; !ok {
			if err := cfg.Set(k, v); err != nil {
				return "", err
			}
			delete(args, k)
		}
	}
	if err := scan(args, dests, "op", "algo", "ranks", "bytes"); err != nil {
		return "", err
	}
	op, err := ten.ParseOp(opName)
	if err != nil {
		return "", err
	}
	p, err := pattern.Generate(op, algo, ranks, root)
	if err != nil {
		return "", err
	}
	if s.tu, err = tuner.New(cfg, p, s.bytes); err != nil {
		return "", err
	}
	s.epoch, s.congest, s.noise = 0, nil, nil
	return fmt.Sprintf("%s/%s: %d ranks, %d chunks, %d flows, %d steps; Model=%s B=%d Lag=%d Seed=%d",
		op, p.Algo, p.Ranks, p.Chunks(), len(p.Flows), p.Steps(), cfg.Model, cfg.B, cfg.Lag, cfg.Seed), nil
}

func (s *scenario) congestion(args map[string]string) (string, error) {
	var rank int
	var dir string
	var factor float64
	c := congestion{to: math.MaxInt}
	dests := map[string]any{"rank": &rank, "dir": &dir, "factor": &factor, "from": &c.from, "to": &c.to}
	if err := scan(args, dests, "rank", "dir", "factor"); err != nil {
		return "", err
	}
	r := int32(rank)
	switch dir {
	case "in":
		c.factor = fixture.Into(r, factor)
	case "out":
		c.factor = fixture.OutOf(r, factor)
	case "both":
		in, out := fixture.Into(r, factor), fixture.OutOf(r, factor)
		c.factor = func(i int, f ten.Flow) float64 { return in(i, f) * out(i, f) }
	default:
		return "", fmt.Errorf("dir=%q, want in, out or both", dir)
	}
	if !(factor > 0) || c.from < 0 || c.to <= c.from {
		return "", fmt.Errorf("factor %v from %d to %d: want factor > 0 and 0 <= from < to", factor, c.from, c.to)
	}
	s.congest = append(s.congest, c)
	return "ok", nil
}

// factor is the product of the congestion active at epoch e and the noise.
func (s *scenario) factor(e int) fixture.Factor {
	var fs []fixture.Factor
	for _, c := range s.congest {
		if c.from <= e && e < c.to {
			fs = append(fs, c.factor)
		}
	}
	if s.noise != nil {
		fs = append(fs, s.noise)
	}
	return func(i int, f ten.Flow) float64 {
		x := 1.0
		for _, g := range fs {
			x *= g(i, f)
		}
		return x
	}
}

func (s *scenario) run(epochs int) (string, error) {
	var b strings.Builder
	first := s.epoch
	var batches, changes, kept, reverted int
	var last *tuner.Decision
	for ; s.epoch < first+epochs; s.epoch++ {
		p, _ := s.tu.Pattern(s.epoch)
		d, err := s.tu.Observe(s.epoch, fixture.FCTs(p, s.bytes, s.factor(s.epoch)), 0)
		if err != nil {
			return "", err
		}
		if d == nil {
			continue
		}
		batches, last = batches+1, d
		if line := decisionLine(d); line != "" {
			fmt.Fprintln(&b, line)
		}
		switch {
		case d.Kept:
			kept++
		case d.Reverted:
			reverted++
		}
		if d.Pattern != nil && !d.Reverted {
			changes++
		}
	}
	_, v := s.tu.Pattern(s.epoch)
	fmt.Fprintf(&b, "epochs %d-%d: %d batches, %d changes, %d kept, %d reverted; next epoch runs v%d",
		first, s.epoch-1, batches, changes, kept, reverted, v)
	if last != nil {
		fmt.Fprintf(&b, "; last batch %.1fus", last.Observed*1e6)
	}
	return b.String(), nil
}

// decisionLine is one line for a decision that changed something, "" for
// one that did not: the verdict on the change under evaluation (observed
// time over the time before it, and the judge's own when that differs),
// then the new pattern, with the swaps the
// exploration accepted, or the restored one.
func decisionLine(d *tuner.Decision) string {
	var parts []string
	verdict := fmt.Sprintf("time x%.2f", d.Observed/d.Previous)
	if d.ObservedGain > 0 && math.Abs(1/d.ObservedGain-d.Observed/d.Previous) >= 0.01 {
		// the judge's view differs: its batches' times, one outlier each clipped
		verdict += fmt.Sprintf(", judged x%.2f", 1/d.ObservedGain)
	}
	switch {
	case d.Kept:
		parts = append(parts, fmt.Sprintf("kept v%d (%s)", d.Version, verdict))
	case d.Reverted:
		parts = append(parts, fmt.Sprintf("reverted v%d (%s)", d.Version, verdict))
	}
	if d.Pattern != nil {
		var swaps []string
		for _, tr := range d.Trials {
			if tr.Accepted {
				swaps = append(swaps, tr.Swap.String())
			}
		}
		what := "swaps " + strings.Join(swaps, "; ")
		if d.Reverted {
			what = "the previous pattern"
		}
		parts = append(parts, fmt.Sprintf("v%d from epoch %d: %s", d.NewVersion, d.Effective, what))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("batch %d epoch %d: %s", d.Batch, d.Epoch, strings.Join(parts, ", "))
}

// scan parses args into dests (pointers to string, int, uint64 or float64),
// requiring the keys in required and refusing keys not in dests.
func scan(args map[string]string, dests map[string]any, required ...string) error {
	for _, k := range required {
		if _, ok := args[k]; !ok {
			return fmt.Errorf("missing %s=", k)
		}
	}
	for k, v := range args {
		var err error
		switch p := dests[k].(type) {
		case *string:
			*p = v
		case *int:
			*p, err = strconv.Atoi(v)
		case *uint64:
			*p, err = strconv.ParseUint(v, 10, 64)
		case *float64:
			*p, err = strconv.ParseFloat(v, 64)
		default:
			return fmt.Errorf("unknown argument %s=", k)
		}
		if err != nil {
			return fmt.Errorf("%s=%s: %v", k, v, err)
		}
	}
	return nil
}
