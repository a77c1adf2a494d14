package scenario

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/react-torch/react-torch/pkg/tuner"
)

func TestTunerSpecOver(t *testing.T) {
	spec := func(src string) TunerSpec {
		var ts TunerSpec
		if err := json.Unmarshal([]byte(src), &ts); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	base := spec(`{"Model": "paper", "B": 8, "H": 80, "Epsilon": 0.02, "Lag": 3}`)
	tests := []struct {
		name string
		t    TunerSpec
		want func(c tuner.Config) bool
	}{
		{"empty takes everything", TunerSpec{}, func(c tuner.Config) bool {
			return c.Model == tuner.ModelPaper && c.B == 8 && c.H == 80 && c.Epsilon == 0.02 && c.Lag == 3 && c.Seed == 1
		}},
		{"own fields win", spec(`{"Model": "react", "B": 4, "TauR": 0.01, "Seed": 7}`), func(c tuner.Config) bool {
			return c.Model == tuner.ModelReact && c.B == 4 && c.H == 80 && c.TauR == 0.01 && c.Lag == 3 && c.Seed == 7
		}},
	}
	for _, tt := range tests {
		c, err := tt.t.over(base).config(1)
		if err != nil || !tt.want(c) {
			t.Errorf("%s: config %+v, %v", tt.name, c, err)
		}
	}
	if len(base) != 5 {
		t.Errorf("over changed its base: %v", base)
	}
}

// TestCompare: a compared run with the main run's settings sees the same
// congestion, port draws, tuner seeds and noise, so it is the main run
// again; one with other settings differs, and every figure is there.
func TestCompare(t *testing.T) {
	src := edit(t, fig1, func(m map[string]any) {
		m["epochs"], m["measure_after"] = 60, 20
		m["tuner"] = map[string]any{"Model": "paper"}
		m["noise"] = map[string]any{"sigma": 0.05, "rank_sigma": 0.1, "period": 7}
		m["compare"] = []any{
			map[string]any{"name": "same", "tuner": map[string]any{}},
			map[string]any{"name": "slow", "tuner": map[string]any{"B": 12, "H": 72}},
		}
		delete(m, "variants")
	})
	s := decode(t, src)
	res, err := s.Run(Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := res.Cells[0].Runs[0].Jobs[0]
	if len(j.Compare) != 2 || j.Compare[0].Name != "same" || j.Compare[1].Name != "slow" {
		t.Fatalf("compare runs %+v", j.Compare)
	}
	same, slow := j.Compare[0], j.Compare[1]
	mainDec, _ := json.Marshal(j.Decisions)
	sameDec, _ := json.Marshal(same.Decisions)
	if !slices.Equal(same.React.Times, j.React.Times) || string(sameDec) != string(mainDec) || same.Changes != j.Changes {
		t.Error("a compared run with the main run's settings differs from it")
	}
	if same.Improvement != j.Improvement || (same.Share == nil) != (j.Share == nil) || (j.Share != nil && *same.Share != *j.Share) {
		t.Errorf("same settings: improvement %v share %v, main %v %v", same.Improvement, same.Share, j.Improvement, j.Share)
	}
	if j.Changes == 0 {
		t.Fatal("REACT never changed the pattern; the test needs a tuner that acts")
	}
	if slices.Equal(slow.React.Times, j.React.Times) {
		t.Error("batches of 12 epochs ran as batches of 6")
	}
	if len(slow.Decisions) > 0 && slow.Decisions[0].Epoch < 11 {
		t.Errorf("batches of 12: first decision at epoch %d", slow.Decisions[0].Epoch)
	}
	cs := res.Cells[0].Jobs[0].Compare
	if len(cs) != 2 || cs[1].Name != "slow" || cs[1].Improvement.Mean != slow.Improvement || cs[1].Changes.Mean != float64(slow.Changes) {
		t.Errorf("summary %+v, want the slow run's figures", cs)
	}
}
