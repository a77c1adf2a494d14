package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/react-torch/react-torch/pkg/scenario"
)

// The packet engine: every run of every case (baseline, REACT, variants)
// is one process of the C++ harness (ns3/, `make ns3`), which builds the
// network in ns-3, runs the patterns as DCTCP flows and keeps REACT in the
// loop through libreact's C ABI. Go resolves each case and writes the
// harness's input; the harness writes per-epoch, per-flow times back.

// harnessPath is the harness to run: flag, then $REACT_NS3, then
// react-ns3 beside this binary.
func harnessPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := os.Getenv("REACT_NS3"); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(exe), "react-ns3")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no ns-3 harness at %s (build it with make ns3, or name it with --ns3 or REACT_NS3)", p)
	}
	return p, nil
}

// simulatePacket runs every case in turn (one heavy process at a time: a
// packet run takes a core for seconds to minutes), keeping the harness's
// inputs and outputs under dir/ns3.
func simulatePacket(sc *scenario.Scenario, note, harness, dir string, prog *progressBar) (*scenario.Result, error) {
	cases := sc.Cases()
	work := filepath.Join(dir, "ns3")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	runs := make([]*scenario.Run, len(cases))
	wall := make([]float64, len(cases))
	prog.begin(len(cases))
	defer prog.end()
	for i, c := range cases {
		where := fmt.Sprintf("seed %d", c.Seed)
		if p := sc.Cells()[c.Cell]; len(p) > 0 {
			where = cellLabel(p) + ", " + where
		}
		inputs, err := sc.PacketInputs(c, note)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		outs := make([]scenario.PacketOutput, len(inputs))
		start := time.Now()
		for k, pi := range inputs {
			base := filepath.Join(work, fmt.Sprintf("cell%d-seed%d-%s", c.Cell, c.Seed, fileName(pi.Run)))
			if err := runHarness(harness, pi, base, &outs[k]); err != nil {
				return nil, fmt.Errorf("%s: %s run: %w", where, pi.Run, err)
			}
			prog.set(i, float64(k+1)/float64(len(inputs)))
		}
		wall[i] = time.Since(start).Seconds()
		if runs[i], err = sc.PacketRun(c, outs); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	res, err := sc.Summarize(runs)
	if err != nil {
		return nil, err
	}
	res.Engine, res.Scaling, res.WallS = "ns3", note, wall
	return res, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func fileName(s string) string { return unsafeName.ReplaceAllString(s, "_") }

// runHarness writes pi to base.in.json, runs the harness and reads
// base.out.json into out.
func runHarness(harness string, pi scenario.PacketInput, base string, out *scenario.PacketOutput) error {
	data, err := json.Marshal(pi)
	if err != nil {
		return err
	}
	in, res := base+".in.json", base+".out.json"
	if err := os.WriteFile(in, data, 0o644); err != nil {
		return err
	}
	if err := runHarnessFile(harness, in, res); err != nil {
		return err
	}
	if data, err = os.ReadFile(res); err != nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: %w", res, err)
	}
	if out.Format != "react.ns3-output/v1" {
		return fmt.Errorf("%s: format %q, want react.ns3-output/v1", res, out.Format)
	}
	return nil
}

// runHarnessFile runs the harness on the input file in, writing res; a
// failure carries the harness's own message.
func runHarnessFile(harness, in, res string) error {
	var stderr bytes.Buffer
	cmd := exec.Command(harness, in, res)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("%s: %v: %s", harness, err, bytes.TrimSpace(stderr.Bytes()))
		}
		return err
	}
	return nil
}
