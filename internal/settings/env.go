package settings

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Env is what a process's environment sets.
type Env struct {
	// Values are the settings set, by Name, each of its type (int64,
	// float64, string or bool).
	Values map[string]any `json:"values"`
	// Unknown are REACT_ variables that name no setting: other software
	// uses the prefix too (REACT_APP_* for web front ends), so they are
	// warned about, not refused.
	Unknown []string `json:"unknown"`
	// Problems: one sentence a variable whose value is not of its
	// setting's type, naming both.
	Problems []string          `json:"problems"`
	bad      map[string]string // Problems by variable
}

// notSettings are REACT_ variables of react_torch's that are no group
// setting: the library's path, one rank's host, the tests' congestion hook.
var notSettings = []string{"REACT_LIBRARY", "REACT_HOST_ID", "REACT_TEST_SLOW_RANK"}

// FromEnv reads the settings from environment variables. check_calls
// follows TORCH_DISTRIBUTED_DEBUG=DETAIL, as torch's own collective checks
// do, unless REACT_CHECK_CALLS is set.
func FromEnv(env map[string]string) Env {
	e := Env{Values: map[string]any{"check_calls": strings.EqualFold(env["TORCH_DISTRIBUTED_DEBUG"], "DETAIL")}, Unknown: []string{}, Problems: []string{}, bad: map[string]string{}}
	byVar := map[string]Setting{}
	for _, s := range All() {
		byVar[s.Var] = s
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		s, ok := byVar[k]
		if !ok {
			if strings.HasPrefix(k, "REACT_") && !slices.Contains(notSettings, k) {
				e.Unknown = append(e.Unknown, k)
			}
			continue
		}
		v, err := parseVar(s.Type, env[k])
		if err != nil {
			e.bad[k] = fmt.Sprintf("%s=%q is not a valid %s for %s", k, env[k], s.Type, s.Name)
			e.Problems = append(e.Problems, e.bad[k])
			continue
		}
		e.Values[s.Name] = v
	}
	return e
}

// parseVar reads a variable's text as a setting of type typ; a bool takes
// 1, true, yes, on and 0, false, no, off in any case.
func parseVar(typ, raw string) (any, error) {
	t := strings.TrimSpace(raw)
	switch typ {
	case "int":
		return strconv.ParseInt(t, 10, 64)
	case "float":
		return strconv.ParseFloat(t, 64)
	case "bool":
		switch strings.ToLower(t) {
		case "1", "true", "yes", "on":
			return true, nil
		case "0", "false", "no", "off":
			return false, nil
		}
		return nil, errors.New("not a bool")
	}
	return raw, nil
}

// Init is libreact's own start from the environment: its log level
// (0 debug to 4 off), log file ("" for stderr) and GOMAXPROCS (0 leaves
// Go's). Only these three variables' problems are its.
func (e Env) Init() (level int, path string, procs int, err error) {
	for _, v := range []string{"REACT_LOG_LEVEL", "REACT_LOG_PATH", "REACT_GOMAXPROCS"} {
		if p, ok := e.bad[v]; ok {
			return 0, "", 0, errors.New(p)
		}
	}
	get := func(name string) any {
		if v, ok := e.Values[name]; ok {
			return v
		}
		for _, s := range runtimeSettings() {
			if s.Name == name {
				return s.Default
			}
		}
		panic("settings: no setting " + name)
	}
	level, path, procs = intOf(get("log_level")), get("log_path").(string), intOf(get("gomaxprocs"))
	if level < 0 || level > 4 {
		return 0, "", 0, fmt.Errorf("REACT_LOG_LEVEL=%d: want 0 (debug), 1 (info), 2 (warn), 3 (error) or 4 (off)", level)
	}
	if procs < 0 {
		return 0, "", 0, fmt.Errorf("REACT_GOMAXPROCS=%d: want >= 0 (0 leaves Go's default)", procs)
	}
	return level, path, procs, nil
}

func intOf(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case int:
		return x
	}
	panic(fmt.Sprintf("settings: %v is not an int", v))
}
