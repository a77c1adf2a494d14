package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// harnessForTest is the ns-3 harness make test-ns3 built, or a skip.
func harnessForTest(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("REACT_NS3")
	if bin == "" {
		t.Skip("REACT_NS3 unset: make test-ns3 builds the ns-3 harness (libns3-dev) and names it")
	}
	return bin
}

// TestNS3Tiny runs one 1 MB flow between two hosts of a star at packet
// level and checks its time against the closed form of a store-and-forward
// switch: both links' latency, every byte on the wire (payload plus 42
// bytes of PPP, IP and TCP headers a segment) at the link rate, and the
// last segment once more on the second link. The warm-up epochs are left
// out: the first one pays slow start.
func TestNS3Tiny(t *testing.T) {
	bin := harnessForTest(t)
	out := t.TempDir()
	code, _, stderr := runArgs([]string{"sim", "--engine", "ns3", "--ns3", bin, "--scenario", "testdata/ns3-tiny.json",
		"--out", out, "--quiet", "--no-plots"}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res, _ := readResult(t, filepath.Join(out, "results.json"))
	if res.Engine != "ns3" || len(res.WallS) != 1 {
		t.Fatalf("engine %q, %d wall times; want ns3 and 1", res.Engine, len(res.WallS))
	}
	const (
		bytes   = 1e6
		segment = 1460.0
		header  = 42.0 // PPP 2, IP 20, TCP 20
		rate    = 100e9
		lat     = 1e-6
	)
	segs := math.Ceil(bytes / segment)
	last := bytes - (segs-1)*segment
	want := 2*lat + (bytes+segs*header)*8/rate + (last+header)*8/rate
	for _, got := range res.Cells[0].Runs[0].Jobs[0].Baseline.Times[2:] {
		if math.Abs(got-want) > 0.005*want {
			t.Errorf("epoch time %.3f us, closed form %.3f us (want within 0.5%%)", got*1e6, want*1e6)
		}
	}
}

// TestNS3HarnessErrors checks that the harness refuses bad input with a
// sentence, not a crash.
func TestNS3HarnessErrors(t *testing.T) {
	bin := harnessForTest(t)
	dir := t.TempDir()
	tests := []struct{ name, input, want string }{
		{"not json", "{", "parse error"},
		{"wrong format", `{"format": "react.scenario/v1"}`, "format is not react.ns3-input/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(dir, "in.json")
			if err := os.WriteFile(in, []byte(tt.input), 0o644); err != nil {
				t.Fatal(err)
			}
			err := runHarnessFile(bin, in, filepath.Join(dir, "out.json"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSimEngineUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown engine", []string{"sim", "--scenario", "testdata/sim-small.json", "--engine", "omnet"}, `unknown --engine "omnet"`},
		{"no harness", []string{"sim", "--scenario", "testdata/ns3-tiny.json", "--engine", "ns3", "--ns3", "/nonexistent/react-ns3", "--quiet"}, "/nonexistent/react-ns3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runArgs(append(tt.args, "--out", t.TempDir()), "")
			if code == 0 || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want failure and %q", code, stderr, tt.stderr)
			}
		})
	}
}
