package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SweepSpec runs every combination of the axes' values (the first axis
// outermost), Seeds cases each, with seeds Seed, Seed+1, ...
type SweepSpec struct {
	Seeds int    `json:"seeds,omitempty"` // default 1
	Axes  []Axis `json:"axes,omitempty"`
}

// Axis is one swept parameter. Params: "pairs" (Random of every external
// spec without explicit pairs), "p" (P of every external spec), "ports",
// "bytes" and "ranks" (every job), "collective" ("op/algo", every job),
// "overlap" (Shared of every overlap placement), "failures" (Random of
// every failure spec), "capacity" (Capacity of every failure spec),
// "react_jobs" (the first n jobs run REACT, the others stay static),
// "noise_sigma" and "rank_sigma" (the noise's Sigma and RankSigma).
type Axis struct {
	Param  string  `json:"param"`
	Values []Value `json:"values"`
}

// Value is an axis value: a number or a string.
type Value struct {
	Num   float64
	Str   string
	IsStr bool
}

// UnmarshalJSON reads a number or a string.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		v.IsStr = true
		return json.Unmarshal(b, &v.Str)
	}
	v.IsStr = false
	if err := json.Unmarshal(b, &v.Num); err != nil {
		return fmt.Errorf("axis value %s: want a number or a string", b)
	}
	return nil
}

// MarshalJSON writes the number or the string.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.IsStr {
		return json.Marshal(v.Str)
	}
	return json.Marshal(v.Num)
}

func (v Value) String() string {
	if v.IsStr {
		return v.Str
	}
	return strconv.FormatFloat(v.Num, 'g', -1, 64)
}

// Param is an axis and the value a cell gives it.
type Param struct {
	Param string `json:"param"`
	Value Value  `json:"value"`
}

func cellName(ps []Param) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%v", p.Param, p.Value)
	}
	return b.String()
}

// clone copies the parts apply changes.
func (s *Scenario) clone() *Scenario {
	c := *s
	c.Jobs = append([]JobSpec(nil), s.Jobs...)
	c.External = append([]ExternalSpec(nil), s.External...)
	c.Failures = append([]FailureSpec(nil), s.Failures...)
	c.cells = nil
	c.Sweep = nil
	return &c
}

func paramNames() []string {
	return []string{"pairs", "p", "ports", "bytes", "ranks", "collective", "overlap", "failures", "capacity", "react_jobs", "noise_sigma", "rank_sigma"}
}

func knownParam(p string) bool {
	for _, q := range paramNames() {
		if p == q {
			return true
		}
	}
	return false
}

func (v Value) count(what string) (int, error) {
	if v.IsStr || v.Num != math.Trunc(v.Num) || v.Num < 0 || v.Num > 1<<30 {
		return 0, fmt.Errorf("%s must be a whole number >= 0, got %v", what, v)
	}
	return int(v.Num), nil
}

func (s *Scenario) apply(p Param) error {
	v := p.Value
	switch p.Param {
	case "pairs":
		n, err := v.count("pairs")
		if err != nil {
			return err
		}
		hit := false
		for i := range s.External {
			if len(s.External[i].Pairs) == 0 {
				s.External[i].Random, hit = n, true
			}
		}
		if !hit {
			return errors.New("no external spec without explicit pairs to set")
		}
	case "p":
		n, err := v.count("p")
		if err != nil {
			return err
		}
		if len(s.External) == 0 {
			return errors.New("no external spec to set")
		}
		for i := range s.External {
			s.External[i].P = n
		}
	case "ports", "ranks":
		n, err := v.count(p.Param)
		if err != nil {
			return err
		}
		for i := range s.Jobs {
			if p.Param == "ports" {
				s.Jobs[i].Ports = n
			} else {
				s.Jobs[i].Ranks = n
			}
		}
	case "bytes":
		if v.IsStr || !(v.Num > 0) {
			return fmt.Errorf("bytes must be a number > 0, got %v", v)
		}
		for i := range s.Jobs {
			s.Jobs[i].Bytes = v.Num
		}
	case "collective":
		op, algo, ok := strings.Cut(v.Str, "/")
		if !v.IsStr || !ok {
			return fmt.Errorf(`collective must be a string "op/algo", got %v`, v)
		}
		for i := range s.Jobs {
			s.Jobs[i].Op, s.Jobs[i].Algo = op, algo
		}
	case "overlap":
		n, err := v.count("overlap")
		if err != nil {
			return err
		}
		hit := false
		for i := range s.Jobs {
			if s.Jobs[i].Placement.Kind == "overlap" {
				s.Jobs[i].Placement.Shared, hit = n, true
			}
		}
		if !hit {
			return errors.New(`no job with an "overlap" placement to set`)
		}
	case "failures":
		n, err := v.count("failures")
		if err != nil {
			return err
		}
		if len(s.Failures) == 0 {
			return errors.New("no failure spec to set")
		}
		for i := range s.Failures {
			s.Failures[i].Random = n
		}
	case "capacity":
		if v.IsStr || !(v.Num > 0) {
			return fmt.Errorf("capacity must be a number > 0, got %v", v)
		}
		if len(s.Failures) == 0 {
			return errors.New("no failure spec to set")
		}
		for i := range s.Failures {
			s.Failures[i].Capacity = v.Num
		}
	case "react_jobs":
		n, err := v.count("react_jobs")
		if err != nil {
			return err
		}
		if n > len(s.Jobs) {
			return fmt.Errorf("react_jobs = %d, but there are %d jobs", n, len(s.Jobs))
		}
		for i := range s.Jobs {
			on := i < n
			s.Jobs[i].React = &on
		}
	case "noise_sigma", "rank_sigma":
		if v.IsStr {
			return fmt.Errorf("%s must be a number, got %q", p.Param, v.Str)
		}
		if p.Param == "noise_sigma" {
			s.Noise.Sigma = v.Num
		} else {
			s.Noise.RankSigma = v.Num
		}
	default:
		return fmt.Errorf("unknown param %q", p.Param)
	}
	return nil
}

// check validates one cell's scenario as far as it can without drawing
// anything random.
