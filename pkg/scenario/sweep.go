package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
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

// paramSetter is one axis a sweep may vary and how it sets a cell's
// scenario to a value.
type paramSetter struct {
	name string
	set  func(s *Scenario, v Value) error
}

// paramSetters are the sweep's axes, in the order an unknown one's error
// lists them.
func paramSetters() []paramSetter {
	return []paramSetter{
		{"pairs", setPairs},
		{"p", setP},
		{"ports", func(s *Scenario, v Value) error {
			return setJobCount(s, v, "ports", func(j *JobSpec, n int) { j.Ports = n })
		}},
		{"bytes", setBytes},
		{"ranks", func(s *Scenario, v Value) error {
			return setJobCount(s, v, "ranks", func(j *JobSpec, n int) { j.Ranks = n })
		}},
		{"collective", setCollective},
		{"overlap", setOverlap},
		{"failures", setFailures},
		{"capacity", setCapacity},
		{"react_jobs", setReactJobs},
		{"noise_sigma", func(s *Scenario, v Value) error { return setNoise(v, "noise_sigma", &s.Noise.Sigma) }},
		{"rank_sigma", func(s *Scenario, v Value) error { return setNoise(v, "rank_sigma", &s.Noise.RankSigma) }},
	}
}

func paramNames() []string {
	var names []string
	for _, p := range paramSetters() {
		names = append(names, p.name)
	}
	return names
}

func knownParam(p string) bool {
	return slices.Contains(paramNames(), p)
}

func (v Value) count(what string) (int, error) {
	if v.IsStr || v.Num != math.Trunc(v.Num) || v.Num < 0 || v.Num > 1<<30 {
		return 0, fmt.Errorf("%s must be a whole number >= 0, got %v", what, v)
	}
	return int(v.Num), nil
}

func (s *Scenario) apply(p Param) error {
	for _, ps := range paramSetters() {
		if ps.name == p.Param {
			return ps.set(s, p.Value)
		}
	}
	return fmt.Errorf("unknown param %q", p.Param)
}

func setPairs(s *Scenario, v Value) error {
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
	return nil
}

func setP(s *Scenario, v Value) error {
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
	return nil
}

func setJobCount(s *Scenario, v Value, what string, set func(*JobSpec, int)) error {
	n, err := v.count(what)
	if err != nil {
		return err
	}
	for i := range s.Jobs {
		set(&s.Jobs[i], n)
	}
	return nil
}

func setBytes(s *Scenario, v Value) error {
	if v.IsStr || !(v.Num > 0) {
		return fmt.Errorf("bytes must be a number > 0, got %v", v)
	}
	for i := range s.Jobs {
		s.Jobs[i].Bytes = v.Num
	}
	return nil
}

func setCollective(s *Scenario, v Value) error {
	op, algo, ok := strings.Cut(v.Str, "/")
	if !v.IsStr || !ok {
		return fmt.Errorf(`collective must be a string "op/algo", got %v`, v)
	}
	for i := range s.Jobs {
		s.Jobs[i].Op, s.Jobs[i].Algo = op, algo
	}
	return nil
}

func setOverlap(s *Scenario, v Value) error {
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
	return nil
}

func setFailures(s *Scenario, v Value) error {
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
	return nil
}

func setCapacity(s *Scenario, v Value) error {
	if v.IsStr || !(v.Num > 0) {
		return fmt.Errorf("capacity must be a number > 0, got %v", v)
	}
	if len(s.Failures) == 0 {
		return errors.New("no failure spec to set")
	}
	for i := range s.Failures {
		s.Failures[i].Capacity = v.Num
	}
	return nil
}

func setReactJobs(s *Scenario, v Value) error {
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
	return nil
}

func setNoise(v Value, what string, to *float64) error {
	if v.IsStr {
		return fmt.Errorf("%s must be a number, got %q", what, v.Str)
	}
	*to = v.Num
	return nil
}

// check validates one cell's scenario as far as it can without drawing
// anything random.
