package tuner_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/tuner"
)

// TestSettingsDescribeConfig: every field is listed under its Go name (the
// one spelling), with a type, help, and DefaultConfig's value, which
// Override takes back unchanged.
func TestSettingsDescribeConfig(t *testing.T) {
	typ := reflect.TypeFor[tuner.Config]()
	all := tuner.Settings()
	if len(all) != typ.NumField() {
		t.Fatalf("%d settings for %d fields", len(all), typ.NumField())
	}
	set := map[string]json.RawMessage{}
	for i, s := range all {
		if f := typ.Field(i); s.Name != f.Name || s.Type == "" || s.Help == "" {
			t.Errorf("field %s: setting %+v, want its Go name, a type and help", f.Name, s)
		}
		set[s.Name], _ = json.Marshal(s.Default)
	}
	var c tuner.Config
	if err := c.Override(set); err != nil || c != tuner.DefaultConfig() {
		t.Fatalf("Override(defaults) = %+v, %v; want DefaultConfig", c, err)
	}
}

func TestOverride(t *testing.T) {
	tests := []struct {
		name string
		set  string
		want func(c tuner.Config) bool
		err  string
	}{
		{"empty", `{}`, func(c tuner.Config) bool { return c == tuner.DefaultConfig() }, ""},
		{"some", `{"KtGrowth": 7, "Model": "paper", "TauR": 0.1, "Stepped": true, "Seed": 9}`, func(c tuner.Config) bool {
			return c.KtGrowth == 7 && c.Model == tuner.ModelPaper && c.TauR == 0.1 && c.Stepped && c.Seed == 9 && c.B == 6
		}, ""},
		{"old snake case", `{"kt_growth": 7}`, nil, `unknown setting "kt_growth" (did you mean "KtGrowth"?)`},
		{"other case", `{"model": "paper"}`, nil, `unknown setting "model" (did you mean "Model"?)`},
		{"unknown", `{"Bee": 1}`, nil, `unknown setting "Bee" (the settings: Model, B, `},
		{"string for int", `{"B": "six"}`, nil, `tuner config: B = "six", want an integer`},
		{"fraction for int", `{"Lag": 2.5}`, nil, `Lag = 2.5, want an integer`},
		{"negative seed", `{"Seed": -1}`, nil, `Seed = -1, want an integer`},
		{"null", `{"H": null}`, nil, `H = null, want an integer`},
		{"number for string", `{"Model": 3}`, nil, `Model = 3, want a string`},
		{"first in name order", `{"Lag": "x", "B": "y"}`, nil, `B = "y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.set), &set); err != nil {
				t.Fatal(err)
			}
			c := tuner.DefaultConfig()
			err := c.Override(set)
			checkConfig(t, c, err, tt.want, tt.err)
		})
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name, text string
		want       func(c tuner.Config) bool
		err        string
	}{
		{"B", "3", func(c tuner.Config) bool { return c.B == 3 }, ""},
		{"Model", "paper", func(c tuner.Config) bool { return c.Model == tuner.ModelPaper }, ""},
		{"Model", `"quoted"`, func(c tuner.Config) bool { return c.Model == `"quoted"` }, ""},
		{"Stepped", "true", func(c tuner.Config) bool { return c.Stepped }, ""},
		{"MinGain", "1e-3", func(c tuner.Config) bool { return c.MinGain == 1e-3 }, ""},
		{"B", "six", nil, "B = six, want an integer"},
		{"Stepped", "yes", nil, "Stepped = yes, want true or false"},
		{"lag", "2", nil, `did you mean "Lag"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.text, func(t *testing.T) {
			c := tuner.DefaultConfig()
			err := c.Set(tt.name, tt.text)
			checkConfig(t, c, err, tt.want, tt.err)
		})
	}
}

// checkConfig fails t unless err contains wantErr (when given) or c passes want.
func checkConfig(t *testing.T, c tuner.Config, err error, want func(tuner.Config) bool, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil || !want(c) {
		t.Fatalf("%+v, %v", c, err)
	}
}
