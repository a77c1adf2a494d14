package tuner_test

import (
	"reflect"
	"testing"

	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
)

// The report holds one change per pattern the tuner moved to (a revert is
// its change's verdict, not a change), each verdict as the decisions gave
// it, and, for the link model, the slow link first.
func TestReportFollowsDecisions(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	for name, cfg := range models() {
		for _, tc := range []struct {
			name     string
			worsened bool // every pattern but the initial one is slower still
		}{{"moved off", false}, {"reverted", true}} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				tu, err := tuner.New(cfg, p, msg)
				if err != nil {
					t.Fatal(err)
				}
				// Rank 3's downlink is slow; with worsened, every pattern
				// but the initial one is slower still.
				moved := func(e int) bool { cur, _ := tu.Pattern(e); return !reflect.DeepEqual(cur.Flows, p.Flows) }
				var ds []*tuner.Decision
				if cfg.Model == tuner.ModelReact {
					net, slow := quietNet(8), quietNet(8)
					net.Down[3], slow.Down[3], slow.C = 2, 2, slow.C/2
					ds, _ = driveNet(t, tu, 60, func(e int) *links.Net {
						if tc.worsened && moved(e) {
							return slow
						}
						return net
					}, nil)
				} else {
					ds = drive(t, tu, 60, func(e, i int, f ten.Flow) float64 {
						x := 1.0
						if f.Dst == 3 {
							x = 3
						}
						if tc.worsened && moved(e) {
							x *= 2
						}
						return x
					})
				}
				r := tu.Report()
				var want []string
				for _, d := range ds {
					if (d.Kept || d.Reverted) && len(want) > 0 && want[len(want)-1] == "pending" {
						want[len(want)-1] = map[bool]string{true: "kept", false: "reverted"}[d.Kept]
					}
					if d.Pattern != nil && !d.Reverted {
						want = append(want, "pending")
					}
				}
				if len(want) == 0 {
					t.Fatal("the tuner made no change")
				}
				var got []string
				for _, c := range r.Changes {
					got = append(got, c.Verdict)
					if len(c.Swaps) == 0 || c.To <= c.From || c.Effective <= c.Epoch {
						t.Errorf("change %+v", c)
					}
					if c.Verdict != "pending" && c.Measured <= 0 {
						t.Errorf("change %+v judged without a measured speed-up", c)
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("verdicts %v, decisions say %v", got, want)
				}
				if tc.worsened && !contains(got, "reverted") {
					t.Errorf("verdicts %v, want a revert", got)
				}
				if r.Epoch != 59 || r.Time == nil || r.Time.Epochs != cfg.B || r.Time.P95 < r.Time.Mean*(1-1e-9) {
					t.Errorf("epoch %d, times %+v", r.Epoch, r.Time)
				}
				if cfg.Model == tuner.ModelReact {
					if len(r.Links) == 0 || r.Links[0].LinkRef != (tuner.LinkRef{Rank: 3, Dir: "down"}) {
						t.Errorf("links %+v, want rank 3's downlink first", r.Links)
					}
					if r.Changes[0].Predicted <= 1 {
						t.Errorf("first change predicted %v", r.Changes[0].Predicted)
					}
				} else if len(r.Links) != 0 {
					t.Errorf("the paper's loop reports links %+v", r.Links)
				}
			})
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Asking for reports (which replay the held epochs to find ambiguous
// links) changes nothing the tuner decides.
func TestReportLeavesDecisionsAlone(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	net := quietNet(8)
	net.Down[3], net.Up[5] = 2, 1
	var runs [2][]*tuner.Decision
	for i := range runs {
		tu, err := tuner.New(tuner.DefaultConfig(), p, msg)
		if err != nil {
			t.Fatal(err)
		}
		runs[i], _ = driveNet(t, tu, 90, func(e int) *links.Net {
			if i == 1 && e%6 == 0 {
				tu.Report()
			}
			return net
		}, nil)
	}
	if len(runs[0]) != len(runs[1]) {
		t.Fatalf("%d decisions, %d with reports", len(runs[0]), len(runs[1]))
	}
	changed := false
	for _, d := range runs[0] {
		changed = changed || d.Pattern != nil
	}
	if !changed {
		t.Fatal("the tuner made no change: nothing to compare")
	}
	for b := range runs[0] {
		x, y := runs[0][b], runs[1][b]
		if x.Note != y.Note || x.Kept != y.Kept || x.Reverted != y.Reverted || x.NewVersion != y.NewVersion || x.Expected != y.Expected {
			t.Errorf("batch %d: %+v\nwith reports %+v", b, x, y)
		}
	}
}
