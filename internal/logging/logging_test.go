package logging

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestNewWritesJSONLinesWithRank(t *testing.T) {
	t.Setenv("RANK", "3")
	path := filepath.Join(t.TempDir(), "react.log")
	log, closeLog, err := New(Info, path)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("shown", zap.Int("version", 2))
	if err := closeLog(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), data)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m["msg"] != "shown" || m["rank"] != 3.0 || m["version"] != 2.0 || m["pid"] == nil {
		t.Fatalf("line %v", m)
	}
}

func TestNewLevels(t *testing.T) {
	for _, tc := range []struct {
		level int
		ok    bool
	}{{Debug, true}, {Error, true}, {Off, true}, {Debug - 1, false}, {Off + 1, false}} {
		_, closeLog, err := New(tc.level, "")
		if (err == nil) != tc.ok {
			t.Fatalf("level %d: %v", tc.level, err)
		}
		if err == nil {
			closeLog()
		}
	}
	if _, _, err := New(Info, filepath.Join(t.TempDir(), "no", "such", "dir", "x.log")); err == nil || !strings.Contains(err.Error(), "log file") {
		t.Fatalf("unwritable path: %v", err)
	}
}

func TestRank(t *testing.T) {
	t.Setenv("RANK", "")
	if Rank() != -1 {
		t.Fatal("empty RANK")
	}
	t.Setenv("RANK", "12")
	if Rank() != 12 {
		t.Fatal("RANK=12")
	}
}
