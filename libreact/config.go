package main

/*
#include "react.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/react-torch/react-torch/internal/settings"
	"github.com/react-torch/react-torch/pkg/tuner"
)

// parsed is a config_json as read.
type parsed struct {
	tuner tuner.Config
	label string          // for the logs
	key   json.RawMessage // the key as reports name it (leader keys), or nil
}

// parseConfig reads config_json: tuner settings by tuner.Config's JSON
// names over DefaultConfig, "label", a string for the logs, and "key", any
// JSON value naming the collective in reports.
func parseConfig(s string) (parsed, error) {
	c := parsed{tuner: tuner.DefaultConfig()}
	trimmed := bytes.TrimLeft([]byte(s), " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return c, errors.New("config_json is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var set map[string]json.RawMessage
	if err := dec.Decode(&set); err != nil {
		return c, fmt.Errorf("config_json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return c, errors.New("config_json: data after the object")
	}
	if raw, ok := set["label"]; ok {
		if err := json.Unmarshal(raw, &c.label); err != nil {
			return c, fmt.Errorf("config_json: label = %s, want a string", raw)
		}
		delete(set, "label")
	}
	if raw, ok := set["key"]; ok {
		c.key = raw
		delete(set, "key")
	}
	if err := c.tuner.Override(set); err != nil {
		return c, fmt.Errorf("config_json: %w", err)
	}
	return c, nil
}

//export react_go_settings
func react_go_settings(buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	if n == nil {
		return fail(C.REACT_E_ARG, "react_settings: len must not be NULL")
	}
	enc, err := plainJSON(settings.All())
	if err != nil {
		return fail(C.REACT_E_PANIC, "react_settings: %v", err)
	}
	return out(enc, buf, cap, n)
}

//export react_go_settings_check
func react_go_settings_check(values *C.char, size C.int, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_settings_check"
	if values == nil || n == nil {
		return fail(C.REACT_E_ARG, "%s: values and len must not be NULL", who)
	}
	if size < 1 {
		return fail(C.REACT_E_ARG, "%s: size %d, want >= 1", who, size)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(C.GoString(values))))
	var set map[string]json.RawMessage
	if err := dec.Decode(&set); err != nil || set == nil {
		return fail(C.REACT_E_INVALID, "%s: values are not a JSON object", who)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(C.REACT_E_INVALID, "%s: data after the values' object", who)
	}
	bad := settings.Check(set, int(size))
	if bad == nil {
		bad = []string{}
	}
	enc, err := plainJSON(bad)
	if err != nil {
		return fail(C.REACT_E_PANIC, "%s: %v", who, err)
	}
	return out(enc, buf, cap, n)
}

// plainJSON encodes v as JSON without escaping <, > and & (the sentences
// say ">= 1").
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
