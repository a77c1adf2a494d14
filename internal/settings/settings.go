// Package settings is the table of what a user of react_torch sets: the
// runtime's own settings and the tuner's (tuner.Config), each with the
// environment variable that sets it, and the rules their values must
// meet. react_torch reads both through libreact and copies neither.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/react-torch/react-torch/internal/layout"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
)

// Setting is one setting, by configure()'s keyword (Name) or its
// environment variable (Var).
type Setting struct {
	Name    string `json:"name"`
	Var     string `json:"var"`
	Type    string `json:"type"` // int, float, string or bool
	Default any    `json:"default"`
	Help    string `json:"help"`
	// Tuner: a field of tuner.Config, passed to the tuner as set; the
	// others are the runtime's.
	Tuner bool `json:"tuner,omitempty"`
	// Shared: every rank of a group must have the same value; each runs the
	// same patterns, switch epochs and tags only then.
	Shared bool `json:"shared,omitempty"`
}

// runtimeSettings is react_torch's own settings, in the order the README
// lists them.
func runtimeSettings() []Setting {
	algo := func(op ten.Op) Setting {
		as := pattern.Algos(op)
		help := strings.Join(as, ", ")
		if len(as) > 1 {
			help = strings.Join(as[:len(as)-1], ", ") + " or " + as[len(as)-1]
		}
		name := "algo_" + op.String()
		return Setting{Name: name, Var: "REACT_" + strings.ToUpper(name), Type: "string", Default: as[0], Help: help, Shared: true}
	}
	return []Setting{
		{Name: "tune", Var: "REACT_TUNE", Type: "bool", Default: true, Shared: true,
			Help: "run the tuner; 0 keeps the static patterns"},
		{Name: "hosts", Var: "REACT_HOSTS", Type: "string", Default: "auto", Shared: true,
			Help: "auto (hierarchical when the group spans several hosts and one runs several of its ranks), flat (one pattern over every rank) or hier"},
		algo(ten.AllReduce), algo(ten.AllGather), algo(ten.ReduceScatter), algo(ten.Broadcast), algo(ten.Reduce),
		{Name: "leader", Var: "REACT_LEADER", Type: "int", Default: 0, Shared: true,
			Help: "rank that runs the tuner"},
		{Name: "fct_log", Var: "REACT_FCT_LOG", Type: "string", Default: "",
			Help: "write per-flow FCTs in the react replay format, one file per collective: PATH.OP.DTYPE.NUMEL[.rootR].jsonl (leader)"},
		{Name: "log_level", Var: "REACT_LOG_LEVEL", Type: "int", Default: 2,
			Help: "libreact log level: 0 debug, 1 info, 2 warn, 3 error, 4 off"},
		{Name: "log_path", Var: "REACT_LOG_PATH", Type: "string", Default: "",
			Help: "libreact log file ('' = stderr)"},
		{Name: "gomaxprocs", Var: "REACT_GOMAXPROCS", Type: "int", Default: 1,
			Help: "Go threads per rank (0 = Go's default, all CPUs; a tuned group's leader takes at least 2: its tuners keep one)"},
		{Name: "segment_bytes", Var: "REACT_SEGMENT_BYTES", Type: "int", Default: 0, Shared: true,
			Help: "a message is sent in segments of about this size, so reducing one overlaps receiving the next (0: whole)"},
		{Name: "min_calls", Var: "REACT_MIN_CALLS", Type: "int", Default: 3, Shared: true,
			Help: "a key is tuned only from its this-many-th call on"},
		{Name: "check_calls", Var: "REACT_CHECK_CALLS", Type: "bool", Default: false, Shared: true,
			Help: "also compare every rank's call before any of its data moves, even between the ranks that agree, and on NCCL (default: on with TORCH_DISTRIBUTED_DEBUG=DETAIL, as Gloo's own check; it costs about 30% of a 1 MB AllReduce on 4 CPU ranks here). Without it a call's tags carry its signature and a mismatch still fails on every rank"},
	}
}

// perCollective reports the tuner.Config fields that the runtime sets for
// each collective, which no user sets: Stepped (how the executor that ran
// it times flows) and OneHost (every rank of its pattern on one host).
func perCollective(name string) bool { return name == "Stepped" || name == "OneHost" }

// All lists every setting: the runtime's, then the tuner's in
// tuner.Config's order.
func All() []Setting {
	all := runtimeSettings()
	for _, s := range tuner.Settings() {
		if perCollective(s.Name) {
			continue
		}
		// Lag decides at which epoch a switch takes effect on every rank
		all = append(all, Setting{Name: s.Name, Var: variable(s.Name), Type: s.Type, Default: s.Default, Help: s.Help, Tuner: true, Shared: s.Name == "Lag"})
	}
	return all
}

var wordStart = regexp.MustCompile(`([a-z])([A-Z][a-z])`)

// variable is a tuner setting's environment variable: REACT_ and its name
// in upper case, an underscore where a word of two or more letters starts
// (KtGrowth is REACT_KT_GROWTH, TauR REACT_TAUR, EMax REACT_EMAX), the
// names users already set.
func variable(name string) string {
	return "REACT_" + strings.ToUpper(wordStart.ReplaceAllString(name, "${1}_${2}"))
}

// wants is how a problem says what a type takes.
var wants = map[string]string{"int": "an integer", "float": "a number", "string": "a string", "bool": "true or false"}

// Check lists what is wrong with the settings set (by Name, JSON values;
// the rest keep their defaults) for a group of size ranks, one sentence a
// problem, each naming the variable and its value. The tuner's settings
// are checked only where the group is tuned.
func Check(set map[string]json.RawMessage, size int) []string {
	all := All()
	byName := make(map[string]Setting, len(all))
	for _, s := range all {
		byName[s.Name] = s
	}
	var bad []string
	show := func(name string) string { return fmt.Sprintf("%s=%s", byName[name].Var, bytes.TrimSpace(set[name])) }
	rt := map[string]any{}
	for _, s := range runtimeSettings() {
		raw, _ := json.Marshal(s.Default)
		rt[s.Name], _ = decode(s.Type, raw)
	}
	tunerSet := map[string]json.RawMessage{}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		s, ok := byName[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("unknown setting %q", name))
		case s.Tuner:
			tunerSet[name] = set[name]
		default:
			v, err := decode(s.Type, set[name])
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: want %s", show(name), wants[s.Type]))
				continue
			}
			rt[name] = v
		}
	}
	ints := func(name string) int64 { v, _ := rt[name].(int64); return v }
	if !slices.Contains(layout.Modes, rt["hosts"].(string)) {
		bad = append(bad, fmt.Sprintf("%s: want %s", show("hosts"), strings.Join(layout.Modes, ", ")))
	}
	if l := ints("log_level"); l < 0 || l > 4 {
		bad = append(bad, fmt.Sprintf("%s: want 0 (debug), 1 (info), 2 (warn), 3 (error) or 4 (off)", show("log_level")))
	}
	if l := ints("leader"); l < 0 || l >= int64(size) {
		bad = append(bad, fmt.Sprintf("%s: the leader must be a rank of the group, 0 to %d", show("leader"), size-1))
	}
	if ints("segment_bytes") < 0 {
		bad = append(bad, fmt.Sprintf("%s: want >= 0 (0 sends whole messages)", show("segment_bytes")))
	}
	if ints("min_calls") < 1 {
		bad = append(bad, fmt.Sprintf("%s: want >= 1", show("min_calls")))
	}
	if ints("gomaxprocs") < 0 {
		bad = append(bad, fmt.Sprintf("%s: want >= 0 (0 leaves Go's default)", show("gomaxprocs")))
	}
	for _, op := range []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce} {
		name := "algo_" + op.String()
		root := -1
		if op.Rooted() {
			root = 0
		}
		if _, err := pattern.Generate(op, rt[name].(string), 2, root); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", show(name), err))
		}
	}
	if size > 1 {
		if _, err := pattern.Generate(ten.Broadcast, "tree", size, 0); err != nil {
			bad = append(bad, fmt.Sprintf("a group of %d ranks: %v", size, err))
		}
	}
	if rt["tune"].(bool) && size > 1 {
		c := tuner.DefaultConfig()
		err := c.Override(tunerSet)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			what := "tuner settings"
			if m := tunerField.FindStringSubmatch(err.Error()); m != nil && tunerSet[m[1]] != nil {
				what = show(m[1])
			}
			bad = append(bad, fmt.Sprintf("%s: %s", what, strings.TrimPrefix(err.Error(), "tuner config: ")))
		}
	}
	return bad
}

// tunerField finds the setting a tuner.Config error names.
var tunerField = regexp.MustCompile(`^tuner config: (\w+) =`)

// decode reads a JSON value of a setting's type: an integer for int (a
// float with no fraction too, as JSON writers give them), any number for
// float.
func decode(typ string, raw json.RawMessage) (any, error) {
	var err error
	switch typ {
	case "int":
		var f float64
		if err = json.Unmarshal(raw, &f); err == nil && f == float64(int64(f)) {
			return int64(f), nil
		}
	case "float":
		var f float64
		if err = json.Unmarshal(raw, &f); err == nil {
			return f, nil
		}
	case "string":
		var s string
		if err = json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
	case "bool":
		var b bool
		if err = json.Unmarshal(raw, &b); err == nil {
			return b, nil
		}
	}
	if err == nil {
		err = errors.New("not an integer")
	}
	return nil, err
}
