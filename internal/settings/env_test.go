package settings

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		values   map[string]any
		unknown  []string
		problems []string
	}{
		{"nothing set", map[string]string{"HOME": "/root"}, map[string]any{"check_calls": false}, nil, nil},
		{"every type", map[string]string{"REACT_TUNE": "off", "REACT_LAG": " 3 ", "REACT_EPSILON": "0.1", "REACT_ALGO_ALLREDUCE": "ring"},
			map[string]any{"check_calls": false, "tune": false, "Lag": int64(3), "Epsilon": 0.1, "algo_allreduce": "ring"}, nil, nil},
		{"bools in any case", map[string]string{"REACT_TUNE": "YES", "REACT_CHECK_CALLS": "On"},
			map[string]any{"check_calls": true, "tune": true}, nil, nil},
		{"torch's debug turns the check on", map[string]string{"TORCH_DISTRIBUTED_DEBUG": "detail"},
			map[string]any{"check_calls": true}, nil, nil},
		{"unless it is set", map[string]string{"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "REACT_CHECK_CALLS": "0"},
			map[string]any{"check_calls": false}, nil, nil},
		{"the prefix is not ours alone", map[string]string{"REACT_APP_X": "1", "REACT_LIBRARY": "/x.so", "REACT_HOST_ID": "a", "REACT_TEST_SLOW_RANK": "1"},
			map[string]any{"check_calls": false}, []string{"REACT_APP_X"}, nil},
		{"values not of their type", map[string]string{"REACT_LAG": "soon", "REACT_TAUR": "high", "REACT_TUNE": "maybe", "REACT_MIN_CALLS": "2.5"},
			map[string]any{"check_calls": false}, nil, []string{
				`REACT_LAG="soon" is not a valid int for Lag`, `REACT_MIN_CALLS="2.5" is not a valid int for min_calls`,
				`REACT_TAUR="high" is not a valid float for TauR`, `REACT_TUNE="maybe" is not a valid bool for tune`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := FromEnv(tc.env)
			if !reflect.DeepEqual(e.Values, tc.values) {
				t.Errorf("values %v, want %v", e.Values, tc.values)
			}
			if !slices.Equal(e.Unknown, tc.unknown) && len(e.Unknown)+len(tc.unknown) > 0 {
				t.Errorf("unknown %v, want %v", e.Unknown, tc.unknown)
			}
			if !slices.Equal(e.Problems, tc.problems) && len(e.Problems)+len(tc.problems) > 0 {
				t.Errorf("problems %q, want %q", e.Problems, tc.problems)
			}
		})
	}
}

func TestEnvInit(t *testing.T) {
	for _, tc := range []struct {
		env              map[string]string
		level, procs     int
		path, wantErrHas string
	}{
		{env: map[string]string{}, level: 2, procs: 1},
		{env: map[string]string{"REACT_LOG_LEVEL": "0", "REACT_LOG_PATH": "/tmp/r.log", "REACT_GOMAXPROCS": "0"}, level: 0, path: "/tmp/r.log"},
		// another variable's problem is not libreact's to start with
		{env: map[string]string{"REACT_LAG": "soon"}, level: 2, procs: 1},
		{env: map[string]string{"REACT_LOG_LEVEL": "loud"}, wantErrHas: `REACT_LOG_LEVEL="loud" is not a valid int`},
		{env: map[string]string{"REACT_LOG_LEVEL": "5"}, wantErrHas: "REACT_LOG_LEVEL=5: want 0 (debug)"},
		{env: map[string]string{"REACT_GOMAXPROCS": "-2"}, wantErrHas: "REACT_GOMAXPROCS=-2: want >= 0"},
	} {
		level, path, procs, err := FromEnv(tc.env).Init()
		if tc.wantErrHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrHas) {
				t.Errorf("%v: error %v, want one saying %q", tc.env, err, tc.wantErrHas)
			}
			continue
		}
		if err != nil || level != tc.level || path != tc.path || procs != tc.procs {
			t.Errorf("%v: %d %q %d %v, want %d %q %d", tc.env, level, path, procs, err, tc.level, tc.path, tc.procs)
		}
	}
}

// Any value of any variable parses to its setting's type or to one problem
// naming the variable; nothing panics.
func FuzzFromEnv(f *testing.F) {
	for _, s := range []string{"3", "soon", "0.1", "off", "", " 1e3 ", "NaN", "9223372036854775808"} {
		f.Add("REACT_LAG", s)
		f.Add("REACT_TAUR", s)
		f.Add("REACT_TUNE", s)
		f.Add("REACT_HOSTS", s)
	}
	types := map[string]string{}
	for _, s := range All() {
		types[s.Var] = s.Type
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		e := FromEnv(map[string]string{k: v})
		typ, known := types[k]
		switch {
		case !known:
			if len(e.Problems) > 0 {
				t.Fatalf("%s=%q: problems %v for no setting", k, v, e.Problems)
			}
		case len(e.Problems) == 1:
			if !strings.HasPrefix(e.Problems[0], k+"=") {
				t.Fatalf("problem %q does not name %s", e.Problems[0], k)
			}
		default:
			var got any
			for _, s := range All() {
				if s.Var == k {
					got = e.Values[s.Name]
				}
			}
			ok := false
			switch got.(type) {
			case int64:
				ok = typ == "int"
			case float64:
				ok = typ == "float"
			case string:
				ok = typ == "string"
			case bool:
				ok = typ == "bool"
			}
			if !ok {
				t.Fatalf("%s=%q: value %#v for a %s", k, v, got, typ)
			}
		}
		_, _, _, _ = e.Init()
	})
}
