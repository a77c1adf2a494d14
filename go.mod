module github.com/react-torch/react-torch

go 1.24.0

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
