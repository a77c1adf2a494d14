package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/react-torch/react-torch/pkg/ten"
)

// Decode reads a scenario file and checks every cell of its sweep. read
// returns the contents of a file the topology names (paths as written in
// the scenario); it may be nil when the scenario names none.
func Decode(data []byte, read func(name string) ([]byte, error)) (*Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scenario: %s", jsonError(data, dec, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("scenario: %s: data after the scenario object", position(data, dec.InputOffset()))
	}
	if err := s.prepare(read); err != nil {
		if s.Name != "" {
			return nil, fmt.Errorf("scenario %q: %w", s.Name, err)
		}
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return &s, nil
}

// jsonError adds the line and column to a decoding error.
func jsonError(data []byte, dec *json.Decoder, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%s: %v", position(data, syn.Offset), err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "value"
		}
		return fmt.Sprintf("%s: %s: got a JSON %s, want %v", position(data, typ.Offset), field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return "empty input, want a JSON object"
	}
	return fmt.Sprintf("%s: %v", position(data, dec.InputOffset()), strings.TrimPrefix(err.Error(), "json: "))
}

func position(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}

// cell is one combination of axis values, with the scenario those values
// give and its jobs' initial patterns.
type cell struct {
	params   []Param
	sc       *Scenario
	patterns []*ten.Pattern
	variants [][]*ten.Pattern
}

func (s *Scenario) prepare(read func(string) ([]byte, error)) error {
	if s.Format != Format {
		return fmt.Errorf("format %q, want %q", s.Format, Format)
	}
	if s.Name == "" {
		return errors.New("no name")
	}
	if s.Epochs < 1 {
		return fmt.Errorf("epochs = %d, want >= 1", s.Epochs)
	}
	if s.MeasureAfter < 0 || s.MeasureAfter >= s.Epochs {
		return fmt.Errorf("measure_after = %d, want in [0, epochs = %d)", s.MeasureAfter, s.Epochs)
	}
	if len(s.Jobs) == 0 {
		return errors.New("no jobs")
	}
	net, err := buildTopology(&s.Topology, read)
	if err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	s.net = net
	if err := s.Topology.checkHosts(); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	if s.simNet, err = s.Topology.simNetwork(net); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	if err := s.Oracle.check(); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	if err := s.Tuner.check(); err != nil {
		return fmt.Errorf("tuner: %w", err)
	}
	if err := s.checkCompare(); err != nil {
		return err
	}
	combos, err := sweepCombos(s.Sweep)
	if err != nil {
		return err
	}
	return s.buildCells(combos)
}

// sweepCombos lists the sweep's cells, each the parameters it sets (one
// cell of none without a sweep).
func sweepCombos(sw *SweepSpec) ([][]Param, error) {
	if sw == nil {
		sw = &SweepSpec{}
	}
	if sw.Seeds < 0 {
		return nil, fmt.Errorf("sweep: seeds = %d, want >= 1", sw.Seeds)
	}
	combos := [][]Param{nil}
	seen := map[string]bool{}
	for i, ax := range sw.Axes {
		if !knownParam(ax.Param) {
			return nil, fmt.Errorf("sweep: axes[%d]: unknown param %q (want one of %s)", i, ax.Param, strings.Join(paramNames(), ", "))
		}
		if seen[ax.Param] {
			return nil, fmt.Errorf("sweep: axes[%d]: param %q swept twice", i, ax.Param)
		}
		seen[ax.Param] = true
		if len(ax.Values) == 0 {
			return nil, fmt.Errorf("sweep: axes[%d] (%s): no values", i, ax.Param)
		}
		var next [][]Param
		for _, c := range combos {
			for _, v := range ax.Values {
				next = append(next, append(append([]Param(nil), c...), Param{ax.Param, v}))
			}
		}
		combos = next
	}
	if len(combos) > maxCells {
		return nil, fmt.Errorf("sweep: %d cells, at most %d", len(combos), maxCells)
	}
	return combos, nil
}

// buildCells makes every cell's scenario, checks it and builds its jobs'
// and variants' patterns, within maxFlows over all cells.
func (s *Scenario) buildCells(combos [][]Param) error {
	flows := 0
	for _, ps := range combos {
		c := &cell{params: ps, sc: s.clone()}
		for _, p := range ps {
			if err := c.sc.apply(p); err != nil {
				return fmt.Errorf("sweep: %s = %v: %w", p.Param, p.Value, err)
			}
		}
		if err := c.sc.check(); err != nil {
			if len(ps) > 0 {
				return fmt.Errorf("cell %s: %w", cellName(ps), err)
			}
			return err
		}
		for i := range c.sc.Jobs {
			p, err := c.sc.Jobs[i].pattern()
			if err != nil {
				return fmt.Errorf("jobs[%d] (%s): %w", i, c.sc.Jobs[i].Name, err)
			}
			c.patterns = append(c.patterns, p)
			if flows += len(p.Flows) * s.Topology.gpus(); flows > maxFlows {
				return fmt.Errorf("the jobs of all cells have more than %d flows; simulate fewer or smaller jobs", maxFlows)
			}
		}
		for k := range c.sc.Variants {
			v := &c.sc.Variants[k]
			pats, err := variantPatterns(v, c.sc, c.patterns)
			if err != nil {
				return fmt.Errorf("variants[%d] (%s): %w", k, v.Name, err)
			}
			c.variants = append(c.variants, pats)
		}
		s.cells = append(s.cells, c)
	}
	return nil
}

// Bounds that keep a typo from exhausting memory: a 720-rank ring has
// about a million flows.
const (
	maxCells = 10000
	maxFlows = 1 << 24
)
