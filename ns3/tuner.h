// tuner.h: the harness's side of libreact's C ABI (capi/react.h), as any
// C++ client would write it from docs/abi.md: patterns decoded from their
// msgpack columns, FCT batches encoded as "react.fcts/v1", one tuner per
// tuned job. No Go here; the library is linked like any C library.
#ifndef REACT_NS3_TUNER_H
#define REACT_NS3_TUNER_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace reactns3 {

// Flow is one edge of a pattern (docs/abi.md, "Patterns").
struct Flow {
    int32_t chunk, step, src, dst;
    uint8_t kind;  // 1 reduce, 2 copy
    double fraction;
};

// Pattern is a decoded pattern plus the msgpack bytes it came from (the
// tuner takes the bytes).
struct Pattern {
    std::string op, algo;
    int ranks = 0, root = -1;
    std::vector<Flow> flows;
    std::vector<uint8_t> bytes;
};

// Error carries libreact's message (react_last_error) or a decoding fault.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// generatePattern calls react_pattern_generate and decodes the result.
Pattern generatePattern(const std::string& op, const std::string& algo, int ranks, int root);

// decodePattern checks bytes with react_pattern_layout (the ABI's one check)
// and decodes their columns.
Pattern decodePattern(const std::vector<uint8_t>& bytes);

// Decision is a new pattern and the epoch from which it runs.
struct Decision {
    int64_t version, effective;
    Pattern pattern;
};

// Tuner owns one libreact tuner handle.
class Tuner {
  public:
    Tuner(const Pattern& initial, double messageBytes, const std::string& configJSON);
    ~Tuner();
    Tuner(const Tuner&) = delete;
    Tuner& operator=(const Tuner&) = delete;

    // submit hands over one epoch's FCTs (seconds, > 0) and its measured
    // collective time, run on pattern version `version`.
    void submit(int64_t epoch, int64_t version, const std::vector<double>& fct, double elapsed);
    // decision returns true and fills d when the tuner emitted a pattern
    // that was not handed out yet.
    bool decision(Decision& d);

  private:
    uint64_t h_ = 0;
};

// checkABI throws unless the library's ABI is the header's.
void checkABI();

}  // namespace reactns3

#endif
