package tuner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Setting describes one field of Config for the readers that are not Go
// code: react_torch learns the names, types and defaults from libreact
// instead of copying them.
type Setting struct {
	Name    string `json:"name"` // the JSON name
	Type    string `json:"type"` // int, float, string or bool
	Default any    `json:"default"`
	Help    string `json:"help"`
}

// types names the kinds of Config's fields; Seed's uint64 is an int that
// Override refuses below zero.
var types = map[reflect.Kind]string{reflect.Int: "int", reflect.Uint64: "int", reflect.Float64: "float", reflect.String: "string", reflect.Bool: "bool"}

// wants is how an error says what a setting takes.
var wants = map[string]string{"int": "an integer", "float": "a number", "string": "a string", "bool": "true or false"}

// Settings lists Config's fields in declaration order, with DefaultConfig's
// values.
func Settings() []Setting {
	t := reflect.TypeFor[Config]()
	d := reflect.ValueOf(DefaultConfig())
	s := make([]Setting, t.NumField())
	for i := range s {
		f := t.Field(i)
		s[i] = Setting{Name: f.Tag.Get("json"), Type: types[f.Type.Kind()], Default: d.Field(i).Interface(), Help: f.Tag.Get("help")}
	}
	return s
}

// Override sets the fields set names, by their exact JSON names, to its
// JSON values. An unknown name or a value of the wrong type is an error
// naming the setting; ranges are Validate's. Names are applied in sorted
// order, so that the error is always the same one.
func (c *Config) Override(set map[string]json.RawMessage) error {
	all := Settings()
	v := reflect.ValueOf(c).Elem()
	for _, name := range slices.Sorted(maps.Keys(set)) {
		i := slices.IndexFunc(all, func(s Setting) bool { return s.Name == name })
		if i < 0 {
			return unknown(name, all)
		}
		raw := bytes.TrimSpace(set[name])
		f := v.Field(i).Addr().Interface()
		if string(raw) == "null" || json.Unmarshal(raw, f) != nil {
			return fmt.Errorf("tuner config: %s = %s, want %s", name, raw, wants[all[i].Type])
		}
	}
	return nil
}

// Set sets one field from its text form, as a command-line flag gives it:
// numbers and booleans as JSON writes them, a string as it is.
func (c *Config) Set(name, text string) error {
	raw := json.RawMessage(text)
	for _, s := range Settings() {
		if s.Name == name && s.Type == "string" {
			raw, _ = json.Marshal(text)
		}
	}
	return c.Override(map[string]json.RawMessage{name: raw})
}

// unknown refuses a name, pointing at the setting it most likely means:
// scenario files and flags once spelled them model, kt_growth, kt-growth.
func unknown(name string, all []Setting) error {
	fold := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	for _, s := range all {
		if fold(s.Name) == fold(name) {
			return fmt.Errorf("tuner config: unknown setting %q (did you mean %q?)", name, s.Name)
		}
	}
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return fmt.Errorf("tuner config: unknown setting %q (the settings: %s)", name, strings.Join(names, ", "))
}
