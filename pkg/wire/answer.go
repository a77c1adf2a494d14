package wire

// # Exchange answer (msgpack)
//
// The leader's answer to one exchange, broadcast to every rank of the
// group: one msgpack map (keys in any order, unknown keys skipped):
//
//	"format"     str  "react.answer/v1"
//	"every"      int  epochs of the clock key per exchange from this
//	                  answer's due exchange on, >= 1
//	"report"     bin  optional: the leader's report (JSON), when a rank asked
//	"decisions"  array of [item, effective, version, pattern]: item is the
//	                  index of the decided key among the exchange's items,
//	                  effective the tuner's switch epoch, version the group's
//	                  version of pattern (its msgpack form, checked by every
//	                  rank before it is used), all >= 0
//
// Go writes and reads it (internal/control); the runtime only moves its
// bytes.

import (
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// AnswerFormat names the answer's form.
const AnswerFormat = "react.answer/v1"

// Answer is the leader's answer to one exchange.
type Answer struct {
	Every     int
	Report    []byte
	Decisions []AnswerDecision
}

// AnswerDecision is one key's new pattern.
type AnswerDecision struct {
	Item, Effective, Version int
	Pattern                  []byte
}

type answerMsg struct {
	Format    string  `msgpack:"format"`
	Every     int64   `msgpack:"every"`
	Report    []byte  `msgpack:"report,omitempty"`
	Decisions [][]any `msgpack:"decisions"`
}

// EncodeAnswer writes a in its msgpack form.
func EncodeAnswer(a *Answer) ([]byte, error) {
	if a.Every < 1 {
		return nil, fmt.Errorf("wire: answer: every %d, want >= 1", a.Every)
	}
	m := answerMsg{Format: AnswerFormat, Every: int64(a.Every), Report: a.Report, Decisions: make([][]any, len(a.Decisions))}
	for i, d := range a.Decisions {
		if d.Item < 0 || d.Effective < 0 || d.Version < 0 || len(d.Pattern) == 0 {
			return nil, fmt.Errorf("wire: answer: decision %d: item %d, effective %d, version %d, %d pattern bytes: want >= 0 and a pattern",
				i, d.Item, d.Effective, d.Version, len(d.Pattern))
		}
		m.Decisions[i] = []any{int64(d.Item), int64(d.Effective), int64(d.Version), d.Pattern}
	}
	return msgpack.Marshal(&m)
}

// DecodeAnswer reads an answer; it never panics.
func DecodeAnswer(data []byte) (*Answer, error) {
	var m struct {
		Format    string               `msgpack:"format"`
		Every     int64                `msgpack:"every"`
		Report    []byte               `msgpack:"report"`
		Decisions []msgpack.RawMessage `msgpack:"decisions"`
	}
	if err := msgpack.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("wire: answer: %w", err)
	}
	if m.Format != AnswerFormat {
		return nil, fmt.Errorf("wire: answer: format %q, want %q", m.Format, AnswerFormat)
	}
	if m.Every < 1 || m.Every > math.MaxInt32 {
		return nil, fmt.Errorf("wire: answer: every %d out of range", m.Every)
	}
	a := &Answer{Every: int(m.Every), Report: m.Report, Decisions: make([]AnswerDecision, len(m.Decisions))}
	for i, raw := range m.Decisions {
		var row []msgpack.RawMessage
		if err := msgpack.Unmarshal(raw, &row); err != nil || len(row) != 4 {
			return nil, fmt.Errorf("wire: answer: decision %d: want [item, effective, version, pattern]", i)
		}
		var n [3]int64
		for j := range n {
			if err := msgpack.Unmarshal(row[j], &n[j]); err != nil || n[j] < 0 || n[j] > math.MaxInt32 {
				return nil, fmt.Errorf("wire: answer: decision %d: %s is not an integer in [0, 2^31)", i, [3]string{"item", "effective", "version"}[j])
			}
		}
		var pat []byte
		if err := msgpack.Unmarshal(row[3], &pat); err != nil || len(pat) == 0 {
			return nil, fmt.Errorf("wire: answer: decision %d: the pattern is not non-empty bytes", i)
		}
		a.Decisions[i] = AnswerDecision{Item: int(n[0]), Effective: int(n[1]), Version: int(n[2]), Pattern: pat}
	}
	return a, nil
}
