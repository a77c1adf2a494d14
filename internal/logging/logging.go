// Package logging builds the library's zap logger from the C ABI's init
// arguments. The library never touches zap's global logger.
package logging

import (
	"fmt"
	"os"
	"strconv"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Levels as the C ABI numbers them (zap's own numbering), and Off.
const (
	Debug = int(zapcore.DebugLevel)
	Info  = int(zapcore.InfoLevel)
	Warn  = int(zapcore.WarnLevel)
	Error = int(zapcore.ErrorLevel)
	Off   = 6
)

// New returns a JSON-lines logger at level (Debug..Error, or Off for none)
// writing to path, appended, or to stderr when path is empty. Every line
// carries pid and rank; rank is the RANK environment variable torchrun
// sets, -1 without it. close flushes and closes the file.
func New(level int, path string) (log *zap.Logger, close func() error, err error) {
	if level < Debug || level > Off {
		return nil, nil, fmt.Errorf("log level %d, want %d (debug) to %d (error), or %d (off)", level, Debug, Error, Off)
	}
	if level == Off {
		return zap.NewNop(), func() error { return nil }, nil
	}
	var ws zapcore.WriteSyncer = zapcore.Lock(os.Stderr)
	closeFile := func() error { return nil }
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		ws, closeFile = zapcore.Lock(f), f.Close
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), ws, zapcore.Level(level))
	log = zap.New(core, zap.ErrorOutput(ws)).With(zap.Int("pid", os.Getpid()), zap.Int("rank", Rank()))
	return log, func() error { log.Sync(); return closeFile() }, nil
}

// Rank returns the RANK environment variable, -1 when unset or not a number.
func Rank() int {
	r, err := strconv.Atoi(os.Getenv("RANK"))
	if err != nil {
		return -1
	}
	return r
}
