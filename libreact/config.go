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

	"github.com/react-torch/react-torch/internal/layout"
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

// logLevels maps the settings' log_level (0 debug to 4 off) to REACT_LOG_*.
var logLevels = [...]int{C.REACT_LOG_DEBUG, C.REACT_LOG_INFO, C.REACT_LOG_WARN, C.REACT_LOG_ERROR, C.REACT_LOG_OFF}

//export react_go_settings_env
func react_go_settings_env(envJSON *C.char, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	if envJSON == nil || n == nil {
		return fail(C.REACT_E_ARG, "react_settings_env: env_json and len must not be NULL")
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(C.GoString(envJSON)), &env); err != nil {
		return fail(C.REACT_E_ARG, "react_settings_env: env_json is not a JSON object of strings: %v", err)
	}
	e := settings.FromEnv(env)
	res := struct {
		settings.Env
		Init      map[string]any `json:"init,omitempty"`
		InitError string         `json:"init_error,omitempty"`
	}{Env: e}
	if level, path, procs, err := e.Init(); err != nil {
		res.InitError = err.Error()
	} else {
		res.Init = map[string]any{"log_level": logLevels[level], "log_path": path, "gomaxprocs": procs}
	}
	enc, err := plainJSON(res)
	if err != nil {
		return fail(C.REACT_E_PANIC, "react_settings_env: %v", err)
	}
	return out(enc, buf, cap, n)
}

//export react_go_hosts_layout
func react_go_hosts_layout(idsJSON, mode *C.char, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	if idsJSON == nil || mode == nil || n == nil {
		return fail(C.REACT_E_ARG, "react_hosts_layout: ids_json, mode and len must not be NULL")
	}
	var ids []string
	if err := json.Unmarshal([]byte(C.GoString(idsJSON)), &ids); err != nil {
		return fail(C.REACT_E_ARG, "react_hosts_layout: ids_json is not a JSON array of strings: %v", err)
	}
	l, err := layout.Of(ids, C.GoString(mode))
	if err != nil {
		return fail(C.REACT_E_ARG, "react_hosts_layout: %v", err)
	}
	enc, err := plainJSON(l)
	if err != nil {
		return fail(C.REACT_E_PANIC, "react_hosts_layout: %v", err)
	}
	return out(enc, buf, cap, n)
}
