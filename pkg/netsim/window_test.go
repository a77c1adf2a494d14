package netsim

import (
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// TestExternalWindow: on an 8-host star (2 us a path), one flow 0->1 an
// epoch takes 2 us + u alone and 2 us + (1+k)u while k external flows share
// h1's downlink. Windowed flows are there exactly in their epochs.
func TestExternalWindow(t *testing.T) {
	star := must(topo.Star(8, 100*gbps, us))
	const size = 4 * mb
	unit := size * 8 / (100 * gbps)
	type group struct {
		src, dst, count int
		w               *Window // nil: always there
	}
	tests := []struct {
		name   string
		groups []group
		want   []float64 // each epoch's time minus the path latency, in units
	}{
		{"no window", []group{{6, 1, 1, nil}}, []float64{2, 2, 2, 2, 2, 2, 2, 2}},
		{"epochs 2 to 4", []group{{6, 1, 2, &Window{From: 2, To: 5}}}, []float64{1, 1, 3, 3, 3, 1, 1, 1}},
		{"from the start", []group{{6, 1, 1, &Window{To: 3}}}, []float64{2, 2, 2, 1, 1, 1, 1, 1}},
		{"no end", []group{{6, 1, 1, &Window{From: 6}}}, []float64{1, 1, 1, 1, 1, 1, 2, 2}},
		{"past the last epoch", []group{{6, 1, 1, &Window{From: 8}}}, []float64{1, 1, 1, 1, 1, 1, 1, 1}},
		{"one epoch", []group{{6, 1, 3, &Window{From: 4, To: 5}}}, []float64{1, 1, 1, 1, 4, 1, 1, 1}},
		{"two windows and a steady flow", []group{
			{7, 1, 1, nil},
			{6, 1, 1, &Window{From: 1, To: 4}},
			{5, 1, 2, &Window{From: 3, To: 6}},
		}, []float64{2, 3, 3, 5, 4, 4, 2, 2}},
		// Out of h1, not into it: another link, no effect.
		{"elsewhere", []group{{1, 6, 2, &Window{From: 2, To: 5}}}, []float64{1, 1, 1, 1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(star, 5)
			for _, g := range tt.groups {
				var err error
				if g.w == nil {
					err = s.AddExternal(g.src, g.dst, g.count)
				} else {
					err = s.AddExternalDuring(g.src, g.dst, g.count, *g.w)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			p := independent(2, [][2]int{{0, 1}}, []float64{1})
			// Run twice: a Run starts from a clean slate of windows.
			for range 2 {
				rs := run(t, s, Job{Hosts: identityHosts(2), Bytes: size}, p, len(tt.want))
				for e, r := range rs {
					if want := 2*us + tt.want[e]*unit; !near(r.Elapsed, want, 1e-9) {
						t.Errorf("epoch %d: %.3f us, want %.3f us (%g units)", e, r.Elapsed/us, want/us, tt.want[e])
					}
				}
			}
		})
	}
}

// TestExternalWindowOtherJob: a window counts the epochs of its own job,
// and its flows slow every job that shares their links. Job 1 (h4->h5,
// three units an epoch) owns a window over its epoch 1 of one flow into h1,
// where job 0 (h0->h1, one unit an epoch) receives: job 0's epochs that
// transmit entirely inside that window take two units, those entirely
// outside one, those that straddle an edge something in between. When job
// 1 stops, its windows close.
func TestExternalWindowOtherJob(t *testing.T) {
	star := must(topo.Star(8, 100*gbps, us))
	const size = 4 * mb
	unit := size * 8 / (100 * gbps)
	lat := 2 * us
	for _, stop := range []bool{false, true} {
		s := New(star, 5)
		to := 2
		if stop {
			to = 0 // no end: job 1 stops after epoch 1, which closes it
		}
		if err := s.AddExternalDuring(6, 1, 1, Window{Job: 1, From: 1, To: to}); err != nil {
			t.Fatal(err)
		}
		jobs := []Job{{Hosts: []int{0, 1}, Bytes: size}, {Hosts: []int{4, 5}, Bytes: 3 * size}}
		p0 := independent(2, [][2]int{{0, 1}}, []float64{1})
		p1 := independent(2, [][2]int{{0, 1}}, []float64{1})
		const epochs = 12
		d := &scripted{patterns: [][]*ten.Pattern{make([]*ten.Pattern, epochs), {p1, p1}}}
		for e := range d.patterns[0] {
			d.patterns[0][e] = p0
		}
		if !stop {
			d.patterns[1] = append(d.patterns[1], p1, p1)
		}
		if err := s.Run(jobs, epochs, d); err != nil {
			t.Fatal(err)
		}
		var lo, hi float64 // job 1's epoch 1
		for _, r := range d.results {
			if r.Job == 1 && r.Epoch == 1 {
				lo, hi = r.Start, r.Start+r.Elapsed
			}
		}
		if !near(lo, lat+3*unit, 1e-9) || !near(hi-lo, lat+3*unit, 1e-9) {
			t.Fatalf("stop %v: job 1's epoch 1 ran [%g, %g], want one epoch of 3 units from %g", stop, lo, hi, lat+3*unit)
		}
		inside, outside, between := 0, 0, 0
		for _, r := range d.results {
			if r.Job != 0 {
				continue
			}
			a, b := r.Start, r.Start+r.Elapsed-lat // the flow transmits in [a, b]
			switch {
			case a >= lo && b <= hi:
				inside++
				if !near(r.Elapsed, lat+2*unit, 1e-9) {
					t.Errorf("stop %v: epoch %d inside the window took %g, want %g", stop, r.Epoch, r.Elapsed, lat+2*unit)
				}
			case b <= lo || a >= hi:
				outside++
				if !near(r.Elapsed, lat+unit, 1e-9) {
					t.Errorf("stop %v: epoch %d outside the window took %g, want %g", stop, r.Epoch, r.Elapsed, lat+unit)
				}
			default:
				between++
				if !(r.Elapsed > lat+unit*(1+1e-9) && r.Elapsed < lat+2*unit*(1-1e-9)) {
					t.Errorf("stop %v: epoch %d across an edge of the window took %g, want between %g and %g", stop, r.Epoch, r.Elapsed, lat+unit, lat+2*unit)
				}
			}
		}
		if inside == 0 || outside < 2 {
			t.Errorf("stop %v: %d epochs of job 0 inside the window, %d outside, %d across; want some of each", stop, inside, outside, between)
		}
	}
}

func TestExternalWindowErrors(t *testing.T) {
	star := must(topo.Star(4, 100*gbps, us))
	s := New(star, 1)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"negative job", s.AddExternalDuring(0, 1, 1, Window{Job: -1}), "job -1"},
		{"negative from", s.AddExternalDuring(0, 1, 1, Window{From: -1}), "from epoch -1"},
		{"empty", s.AddExternalDuring(0, 1, 1, Window{From: 3, To: 3}), "epochs [3, 3) are empty"},
		{"host", s.AddExternalDuring(0, 4, 1, Window{From: 3}), "destination host 4 out of range"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, tt.err, tt.want)
		}
	}
	if err := s.AddExternalDuring(0, 1, 1, Window{Job: 1, From: 2}); err != nil {
		t.Fatal(err)
	}
	err := s.Run([]Job{{Hosts: []int{2, 3}, Bytes: 1}}, 3, &Fixed{Patterns: []*ten.Pattern{independent(2, [][2]int{{0, 1}}, []float64{1})}})
	if err == nil || !strings.Contains(err.Error(), "window of job 1, but 1 jobs run") {
		t.Errorf("error %v, want one naming the window's job", err)
	}
}
