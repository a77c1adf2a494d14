package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestAnswerRoundTrip(t *testing.T) {
	for _, a := range []*Answer{
		{Every: 6},
		{Every: 12, Report: []byte(`{"exchange":3}`)},
		{Every: 6, Decisions: []AnswerDecision{{Item: 1, Effective: 40, Version: 2, Pattern: []byte{1, 2, 3}}, {Item: 0, Effective: 0, Version: 1, Pattern: []byte{9}}}},
	} {
		b, err := EncodeAnswer(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAnswer(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Every != a.Every || !bytes.Equal(got.Report, a.Report) || len(got.Decisions) != len(a.Decisions) {
			t.Fatalf("round trip: %+v, want %+v", got, a)
		}
		for i, d := range a.Decisions {
			g := got.Decisions[i]
			if g.Item != d.Item || g.Effective != d.Effective || g.Version != d.Version || !bytes.Equal(g.Pattern, d.Pattern) {
				t.Fatalf("decision %d: %+v, want %+v", i, g, d)
			}
		}
	}
}

func TestAnswerRefusals(t *testing.T) {
	enc := func(m map[string]any) []byte {
		b, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "answer"},
		{"not a map", []byte{0x01}, "answer"},
		{"format", enc(map[string]any{"format": "x", "every": 6}), "format"},
		{"every", enc(map[string]any{"format": AnswerFormat, "every": 0}), "every 0"},
		{"short decision", enc(map[string]any{"format": AnswerFormat, "every": 6, "decisions": []any{[]any{1, 2, 3}}}), "decision 0"},
		{"negative item", enc(map[string]any{"format": AnswerFormat, "every": 6, "decisions": []any{[]any{-1, 2, 3, []byte{1}}}}), "item"},
		{"version not int", enc(map[string]any{"format": AnswerFormat, "every": 6, "decisions": []any{[]any{1, 2, "v", []byte{1}}}}), "version"},
		{"no pattern", enc(map[string]any{"format": AnswerFormat, "every": 6, "decisions": []any{[]any{1, 2, 3, []byte{}}}}), "pattern"},
	} {
		if _, err := DecodeAnswer(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
	if _, err := EncodeAnswer(&Answer{Every: 0}); err == nil {
		t.Error("every 0 encoded")
	}
	if _, err := EncodeAnswer(&Answer{Every: 1, Decisions: []AnswerDecision{{Item: -1, Pattern: []byte{1}}}}); err == nil {
		t.Error("a negative item encoded")
	}
}

func FuzzDecodeAnswer(f *testing.F) {
	b, _ := EncodeAnswer(&Answer{Every: 6, Report: []byte("{}"), Decisions: []AnswerDecision{{Item: 1, Effective: 4, Version: 2, Pattern: []byte{1}}}})
	f.Add(b)
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAnswer(data)
		if err != nil {
			return
		}
		again, err := EncodeAnswer(a)
		if err != nil {
			t.Fatalf("decoded answer does not encode: %v", err)
		}
		if _, err := DecodeAnswer(again); err != nil {
			t.Fatalf("re-encoded answer does not decode: %v", err)
		}
	})
}
