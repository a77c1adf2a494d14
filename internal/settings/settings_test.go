package settings

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/tuner"
)

func TestAllListsEachSettingOnceWithItsVariable(t *testing.T) {
	seen := map[string]bool{}
	vars := map[string]bool{}
	tuned := 0
	for _, s := range All() {
		if seen[s.Name] || vars[s.Var] {
			t.Errorf("%s (%s) listed twice", s.Name, s.Var)
		}
		seen[s.Name], vars[s.Var] = true, true
		if !strings.HasPrefix(s.Var, "REACT_") || s.Help == "" || wants[s.Type] == "" {
			t.Errorf("%+v: want a REACT_ variable, help and a known type", s)
		}
		if s.Tuner {
			tuned++
		}
	}
	if want := len(tuner.Settings()) - 2; tuned != want {
		t.Errorf("%d tuner settings listed, want tuner.Config's %d but Stepped and OneHost", tuned, want)
	}
	if seen["Stepped"] || seen["OneHost"] {
		t.Error("a field the runtime sets per collective is listed as a setting")
	}
}

func TestVariableKeepsTheNamesUsersSet(t *testing.T) {
	for name, want := range map[string]string{
		"Model": "REACT_MODEL", "B": "REACT_B", "KtGrowth": "REACT_KT_GROWTH", "TauR": "REACT_TAUR",
		"EMax": "REACT_EMAX", "AMax": "REACT_AMAX", "Delta1": "REACT_DELTA1", "MinGain": "REACT_MIN_GAIN",
	} {
		if got := variable(name); got != want {
			t.Errorf("variable(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		set  string
		size int
		want []string // substrings of the one problem; none: no problem
	}{
		{`{}`, 4, nil},
		{`{"tune": false, "Lag": 0}`, 4, nil}, // the tuner's settings count only when tuned
		{`{"Lag": 0}`, 1, nil},                // and not on one rank
		{`{"Lag": 0}`, 4, []string{"REACT_LAG=0: Lag = 0, want >= 1"}},
		{`{"Lag": "2"}`, 4, []string{`REACT_LAG="2": Lag = "2", want an integer`}},
		{`{"Model": "magic"}`, 4, []string{`REACT_MODEL="magic"`, `"react" or "paper"`}},
		{`{"leader": 4}`, 4, []string{"REACT_LEADER=4: the leader must be a rank of the group, 0 to 3"}},
		{`{"leader": -1}`, 4, []string{"REACT_LEADER=-1"}},
		{`{"hosts": "ring"}`, 4, []string{`REACT_HOSTS="ring": want auto, flat, hier`}},
		{`{"log_level": 5}`, 4, []string{"REACT_LOG_LEVEL=5", "4 (off)"}},
		{`{"segment_bytes": -1}`, 4, []string{"REACT_SEGMENT_BYTES=-1: want >= 0"}},
		{`{"min_calls": 0}`, 4, []string{"REACT_MIN_CALLS=0: want >= 1"}},
		{`{"min_calls": 2.5}`, 4, []string{"REACT_MIN_CALLS=2.5: want an integer"}},
		{`{"gomaxprocs": -1}`, 4, []string{"REACT_GOMAXPROCS=-1"}},
		{`{"tune": "yes"}`, 4, []string{`REACT_TUNE="yes": want true or false`}},
		{`{"algo_allreduce": "zigzag"}`, 4, []string{`REACT_ALGO_ALLREDUCE="zigzag"`, "tree, ring, halving_doubling"}},
		{`{"algo_reduce": "binomial"}`, 4, nil},
		{`{}`, 2000, []string{"a group of 2000 ranks", "at most 1024 ranks"}},
		{`{"lagg": 1}`, 4, []string{`unknown setting "lagg"`}},
	} {
		var set map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.set), &set); err != nil {
			t.Fatal(err)
		}
		got := Check(set, tc.size)
		if tc.want == nil {
			if len(got) != 0 {
				t.Errorf("Check(%s, %d) = %q, want nothing wrong", tc.set, tc.size, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("Check(%s, %d) = %q, want one problem", tc.set, tc.size, got)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got[0], w) {
				t.Errorf("Check(%s, %d) = %q, want it to say %q", tc.set, tc.size, got[0], w)
			}
		}
	}
}

// Every default passes the check: a user who sets a setting to its default
// changes nothing.
func TestDefaultsPass(t *testing.T) {
	for _, s := range All() {
		raw, err := json.Marshal(s.Default)
		if err != nil {
			t.Fatal(err)
		}
		if bad := Check(map[string]json.RawMessage{s.Name: raw}, 4); len(bad) != 0 {
			t.Errorf("%s = its default %s: %q", s.Name, raw, bad)
		}
	}
}
