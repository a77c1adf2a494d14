/*
 * test_capi.c: every function of capi/react.h from C, with good and bad
 * input: NULL pointers, unknown and closed handles, short buffers, malformed
 * and semantically wrong patterns, double close, per-thread errors, a forked
 * child.
 *
 *   test_capi LOGFILE
 *
 * Prints one line per failed check and a final "N passed, M failed"; exits
 * non-zero on any failure.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "react.h"

static int passed, failed;
static char errbuf[REACT_ERROR_MAX];

static const char* last_error(void) {
    if (react_last_error(errbuf, sizeof errbuf) == REACT_NONE) return "(none)";
    return errbuf;
}

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (cond) passed++;                                           \
        else {                                                        \
            failed++;                                                 \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
            printf(__VA_ARGS__);                                      \
            printf("\n");                                             \
        }                                                             \
    } while (0)

/* EXPECT: call returns want and, for failures, the thread's message has sub. */
#define EXPECT(call, want, sub)                                                          \
    do {                                                                                 \
        int st_ = (call);                                                                \
        const char* e_ = st_ < 0 ? last_error() : "";                                    \
        CHECK(st_ == (want) && (st_ >= 0 || strstr(e_, (sub)) != NULL),                  \
              "status %d, want %d; last error \"%s\", want it to contain \"%s\"", st_,  \
              (want), e_, (sub));                                                        \
    } while (0)

#define MSG 1048576.0

/* generate returns a malloc'd msgpack pattern via the size-query protocol. */
static uint8_t* generate(const char* op, const char* algo, int ranks, int root, size_t* len) {
    if (react_pattern_generate(op, algo, ranks, root, NULL, 0, len) != REACT_E_SHORT) return NULL;
    uint8_t* b = malloc(*len);
    if (react_pattern_generate(op, algo, ranks, root, b, *len, len) != REACT_OK) {
        free(b);
        return NULL;
    }
    return b;
}

/* make_batch encodes epochs epochs of FCTs of pattern v from epoch0. */
static void make_batch(mp_buf* m, const pattern_view* v, int64_t epoch0, int64_t version, int epochs,
                       int slow) {
    double* fct = malloc(sizeof(double) * epochs * v->nflows);
    double* el = malloc(sizeof(double) * epochs);
    synth_fcts(v, MSG, epoch0, epochs, slow, fct, el);
    mp_batch(m, epoch0, version, epochs, (uint32_t)v->nflows, fct, el);
    free(fct);
    free(el);
}

/* check runs the ABI's one pattern check, react_pattern_layout, without an
 * output buffer: REACT_E_SHORT then means the pattern passed. */
static int check(const uint8_t* p, size_t n) {
    size_t len;
    int st = react_pattern_layout(p, n, NULL, 0, &len);
    return st == REACT_E_SHORT ? REACT_OK : st;
}

/* ---- the library, errors, logging -------------------------------------- */

static void test_library(const char* logfile) {
    CHECK(react_abi_version() == REACT_ABI_VERSION, "abi version %d", react_abi_version());

    char small[8];
    CHECK(react_last_error(small, sizeof small) == REACT_NONE && small[0] == 0, "fresh thread has an error");
    CHECK(react_last_error(NULL, 10) == REACT_E_ARG, "NULL buf");
    CHECK(react_last_error(small, 0) == REACT_E_ARG, "cap 0");

    EXPECT(react_init(99, NULL, 0), REACT_E_ARG, "log level 99");
    EXPECT(react_init(REACT_LOG_INFO, NULL, -2), REACT_E_ARG, "gomaxprocs -2");
    EXPECT(react_init(REACT_LOG_INFO, "/nonexistent-dir/x/react.log", 0), REACT_E_ARG, "log file");
    /* truncation of the thread's message */
    CHECK(react_last_error(small, sizeof small) == REACT_E_SHORT && strlen(small) == sizeof small - 1,
          "short buffer for the last error: \"%s\"", small);
    EXPECT(react_init(REACT_LOG_INFO, logfile, 2), REACT_OK, "");
}

/* ---- patterns ------------------------------------------------------------ */

static void test_patterns(void) {
    size_t len = 0;
    uint8_t buf[64];
    EXPECT(react_pattern_generate(NULL, "tree", 8, -1, NULL, 0, &len), REACT_E_ARG, "must not be NULL");
    EXPECT(react_pattern_generate("allreduce", NULL, 8, -1, NULL, 0, &len), REACT_E_ARG, "must not be NULL");
    EXPECT(react_pattern_generate("allreduce", "tree", 8, -1, NULL, 0, NULL), REACT_E_ARG, "must not be NULL");
    EXPECT(react_pattern_generate("alltoall", "tree", 8, -1, NULL, 0, &len), REACT_E_ARG, "alltoall");
    EXPECT(react_pattern_generate("allreduce", "zigzag", 8, -1, NULL, 0, &len), REACT_E_ARG, "zigzag");
    EXPECT(react_pattern_generate("allreduce", "tree", 0, -1, NULL, 0, &len), REACT_E_ARG, "");
    EXPECT(react_pattern_generate("broadcast", "tree", 8, 9, NULL, 0, &len), REACT_E_ARG, "");

    len = 0;
    EXPECT(react_pattern_generate("allreduce", "tree", 8, -1, NULL, 0, &len), REACT_E_SHORT, "needed");
    size_t need = len;
    CHECK(need > 100, "size query gave %zu", need);
    len = 0;
    EXPECT(react_pattern_generate("allreduce", "tree", 8, -1, buf, sizeof buf, &len), REACT_E_SHORT, "needed");
    CHECK(len == need, "short buffer: len %zu, want %zu", len, need);
    uint8_t* p = malloc(need);
    EXPECT(react_pattern_generate("allreduce", "tree", 8, -1, p, need, &len), REACT_OK, "");
    pattern_view v;
    CHECK(read_pattern(p, len, &v) == 0 && v.ranks == 8 && v.nflows == 28, "pattern ranks %lld flows %lld",
          (long long)v.ranks, (long long)v.nflows);
    EXPECT(check(p, len), REACT_OK, "");

    size_t blen;
    uint8_t* bc = generate("broadcast", "tree", 6, 2, &blen);
    CHECK(bc != NULL, "broadcast from root 2");
    if (bc) EXPECT(check(bc, blen), REACT_OK, "");
    free(bc);

    EXPECT(check(NULL, 10), REACT_E_ARG, "NULL");
    EXPECT(check((const uint8_t*)"\x93\x01\x02\x03", 4), REACT_E_INVALID, "want a map");
    EXPECT(check(p, len / 2), REACT_E_INVALID, "");
    EXPECT(check(p, 0), REACT_E_INVALID, "truncated");

    /* A semantic violation: redirect flow 0 to another rank. */
    uint8_t* bad = malloc(len);
    memcpy(bad, p, len);
    pattern_view bv;
    read_pattern(bad, len, &bv);
    uint8_t* d0 = (uint8_t*)bv.dst;
    int32_t src0 = le_i32(bv.src), dst0 = le_i32(bv.dst);
    int32_t nd = (dst0 + 1) % 8;
    if (nd == src0) nd = (nd + 1) % 8;
    d0[0] = (uint8_t)nd;
    EXPECT(check(bad, len), REACT_E_SEMANTICS, "allreduce");
    free(bad);
    free(p);
}

/* The layout of a ring allgather: every flow carries exactly one block, and
 * flow f of step 1 carries its sender's own block. */
static int layout_column(const uint8_t* b, size_t n, const char* want, const uint8_t** data, uint32_t* items) {
    mp_rd r = {b, b + n, 0};
    int is_map;
    uint32_t keys = rd_len(&r, &is_map);
    for (uint32_t i = 0; i < keys && !r.bad; i++) {
        uint32_t kn;
        const uint8_t* k = rd_bytes(&r, &kn);
        if (r.bad) break;
        if (!rd_key_is(k, kn, want)) { rd_skip(&r); continue; }
        uint32_t fields = rd_len(&r, &is_map);
        for (uint32_t f = 0; f < fields && !r.bad; f++) {
            uint32_t fn;
            const uint8_t* fk = rd_bytes(&r, &fn);
            if (rd_key_is(fk, fn, "data")) { *data = rd_bytes(&r, items); *items /= 4; return r.bad ? -1 : 0; }
            rd_skip(&r);
        }
    }
    return -1;
}

static void test_layout(void) {
    size_t len, need = 0, got = 0;
    uint8_t* p = generate("allgather", "ring", 4, -1, &len);
    CHECK(p != NULL, "ring allgather");
    if (!p) return;
    pattern_view v;
    read_pattern(p, len, &v);
    EXPECT(react_pattern_layout(p, len, NULL, 0, &need), REACT_E_SHORT, "needed");
    uint8_t* ly = malloc(need);
    EXPECT(react_pattern_layout(p, len, ly, need, &got), REACT_OK, "");
    CHECK(got == need, "layout len %zu, want %zu", got, need);
    const uint8_t *start = NULL, *blocks = NULL;
    uint32_t ns = 0, nb = 0;
    CHECK(layout_column(ly, got, "start", &start, &ns) == 0 && ns == v.nflows + 1, "start: %u items for %lld flows", ns, (long long)v.nflows);
    CHECK(layout_column(ly, got, "blocks", &blocks, &nb) == 0 && nb == v.nflows, "blocks: %u for %lld flows", nb, (long long)v.nflows);
    int one_each = start != NULL;
    for (uint32_t f = 0; start && f + 1 < ns; f++) one_each &= le_i32(start + 4 * (f + 1)) - le_i32(start + 4 * f) == 1;
    CHECK(one_each, "every ring allgather flow carries one block");
    EXPECT(react_pattern_layout(NULL, 0, ly, need, &got), REACT_E_ARG, "NULL");
    EXPECT(react_pattern_layout(p, len, ly, need, NULL), REACT_E_ARG, "len must not be NULL");
    uint8_t* bad = malloc(len);
    memcpy(bad, p, len);
    read_pattern(bad, len, &v);
    ((uint8_t*)v.dst)[0] = (uint8_t)((le_i32(v.dst) + 2) % 4); /* flow 0 now goes to a rank that already has the block */
    int st = react_pattern_layout(bad, len, ly, need, &got);
    CHECK(st == REACT_E_SEMANTICS || st == REACT_E_INVALID, "corrupted pattern: status %d", st);
    free(bad);
    free(ly);
    free(p);
}

static void test_plan(void) {
    size_t len, need = 0, got = 0;
    uint8_t* p = generate("allreduce", "ring", 4, -1, &len);
    CHECK(p != NULL, "ring allreduce");
    if (!p) return;
    EXPECT(react_pattern_plan(p, len, 1, 1000, 4, 1024, NULL, 0, &need), REACT_E_SHORT, "needed");
    uint8_t* pl = malloc(need);
    EXPECT(react_pattern_plan(p, len, 1, 1000, 4, 1024, pl, need, &got), REACT_OK, "");
    CHECK(got == need && got > 16 && pl[0] == 0x89, "plan: %zu bytes (first 0x%02x), want %zu, a map of 9", got, pl[0], need);
    int named = 0;
    for (size_t i = 0; i + 13 <= got; i++) named |= memcmp(pl + i, "react.plan/v1", 13) == 0;
    CHECK(named, "plan names its format");
    EXPECT(react_pattern_plan(p, len, 4, 1000, 4, 0, pl, need, &got), REACT_E_ARG, "rank 4 (of 4)");
    EXPECT(react_pattern_plan(p, len, 0, -1, 4, 0, pl, need, &got), REACT_E_ARG, "numel -1");
    EXPECT(react_pattern_plan(p, len, 0, 10, 0, 0, pl, need, &got), REACT_E_ARG, "itemsize 0");
    EXPECT(react_pattern_plan(p, len, 0, 10, 4, -1, pl, need, &got), REACT_E_ARG, "segment_bytes -1");
    EXPECT(react_pattern_plan(p, len, 0, 10, 4, 0, pl, need, NULL), REACT_E_ARG, "len must not be NULL");
    EXPECT(react_pattern_plan(NULL, 0, 0, 10, 4, 0, pl, need, &got), REACT_E_ARG, "NULL");
    free(pl);
    free(p);
}

/* A rank's control plane, as a tuned group's leader of one: one key, two
 * epochs, their exchange, the leader's answer and the vote; the errors that
 * name what was wrong. The rules are internal/control's (datadriven tests
 * there). */
static void test_control(void) {
    size_t len, need = 0, got = 0;
    uint8_t* p = generate("allreduce", "ring", 4, -1, &len);
    CHECK(p != NULL, "ring allreduce");
    if (!p) return;
    pattern_view v;
    read_pattern(p, len, &v);
    uint64_t h = 0, other = 0;
    const char* conf = "{\"batch\": 2, \"min_calls\": 0, \"tuned\": true, \"leader\": true}";
    EXPECT(react_control_create("{\"batch\": 2, \"bogus\": 1}", &h), REACT_E_INVALID, "bogus");
    EXPECT(react_control_create("{\"batch\": 0}", &h), REACT_E_INVALID, "batch 0");
    EXPECT(react_control_create(conf, NULL), REACT_E_ARG, "NULL");
    EXPECT(react_control_create(conf, &h), REACT_OK, "");
    EXPECT(react_control_create("{\"batch\": 2, \"tuned\": true}", &other), REACT_OK, "");
    int id = -1;
    EXPECT(react_control_key(h, p, len, 4096, 4, "{\"Bogus\": 1}", "", &id), REACT_E_INVALID, "Bogus");
    EXPECT(react_control_key(h, p, len / 2, 4096, 4, "{}", "", &id), REACT_E_INVALID, "react_control_key");
    EXPECT(react_control_key(h, p, len, -1, 4, "{}", "", &id), REACT_E_ARG, "numel -1");
    EXPECT(react_control_key(h, p, len, 4096, 4, "{\"label\": \"t\", \"key\": [\"t\"]}", "", &id), REACT_OK, "");
    CHECK(id == 0, "first key id %d", id);
    int64_t* flows = malloc(sizeof(int64_t) * (size_t)v.nflows);
    double* arr = malloc(sizeof(double) * (size_t)v.nflows);
    for (int64_t f = 0; f < v.nflows; f++) {
        flows[f] = f;
        arr[f] = 1e-3 * (double)(f / 4 + 1);
    }
    int64_t epoch = -1, version = -1, due[5], out2[2];
    EXPECT(react_control_begin(h, 5, &epoch, &version), REACT_E_ARG, "key 5");
    EXPECT(react_control_begin(h, id, &epoch, &version), REACT_OK, "");
    CHECK(epoch == 0 && version == 0, "epoch %lld version %lld", (long long)epoch, (long long)version);
    flows[0] = v.nflows;
    EXPECT(react_control_end(h, id, flows, arr, (size_t)v.nflows, 0.01, 0, 1.0, 0, due), REACT_E_INVALID, "flow");
    flows[0] = 0;
    EXPECT(react_control_end(h, id, flows, NULL, (size_t)v.nflows, 0.01, 0, 1.0, 0, due), REACT_E_ARG, "NULL");
    EXPECT(react_control_begin(h, id, &epoch, &version), REACT_OK, "");
    EXPECT(react_control_end(h, id, flows, arr, (size_t)v.nflows, 0.01, 0, 1.0, 0, due), REACT_OK, "");
    CHECK(due[0] == 1 && due[1] == 0 && due[3] == 2 && due[4] == 0, "epoch 1: recorded %lld, due %lld, next %lld, ask %lld",
          (long long)due[0], (long long)due[1], (long long)due[3], (long long)due[4]);
    EXPECT(react_control_begin(h, id, &epoch, &version), REACT_OK, "");
    EXPECT(react_control_end(h, id, flows, arr, (size_t)v.nflows, 0.01, 0, 1.0, 0, due), REACT_OK, "");
    CHECK(due[0] == 1 && due[1] == 1 && due[2] < 1, "epoch 2: recorded %lld, due %lld, need %lld", (long long)due[0],
          (long long)due[1], (long long)due[2]);
    uint8_t rb[16];
    EXPECT(react_control_report(h, 1, rb, sizeof rb, &got), REACT_OK, "");
    CHECK(got == 0, "no report before an answer: %zu bytes", got);
    EXPECT(react_control_send(h, 1.0, out2), REACT_OK, "");
    CHECK(out2[0] == 1 && out2[1] == 0, "sent %lld, deferred %lld", (long long)out2[0], (long long)out2[1]);
    EXPECT(react_control_fill(h, 1, 0, flows, arr, 1, 0.01), REACT_E_INVALID, "0 deferred");
    EXPECT(react_control_row(h, 2, NULL, 0, &need), REACT_E_STATE, "exchange 2");
    EXPECT(react_control_row(h, 1, NULL, 0, &need), REACT_E_SHORT, "needed");
    int64_t width = v.nflows + 1 + v.ranks;
    CHECK((int64_t)need == 2 * width + 1, "row of %zu values, want %lld", need, (long long)(2 * width + 1));
    double* row = malloc(sizeof(double) * need);
    EXPECT(react_control_row(h, 1, row, need, &got), REACT_OK, "");
    CHECK(row[v.nflows] == 0.01 && row[need - 1] == 1.0, "elapsed %g, report slot %g", row[v.nflows], row[need - 1]);
    EXPECT(react_control_take(other, 1, row, need), REACT_E_STATE, "leader");
    EXPECT(react_control_take(h, 1, row, need), REACT_OK, "");
    EXPECT(react_control_answer(h, 1, 0.0, NULL, 0, &need), REACT_E_SHORT, "needed");
    uint8_t* body = malloc(need);
    EXPECT(react_control_answer(h, 1, 0.0, body, need, &got), REACT_OK, "");
    int64_t ok[4];
    EXPECT(react_control_check(h, 1, body, got / 2, ok, 4, &need), REACT_E_INVALID, "answer");
    EXPECT(react_control_check(h, 1, body, got, ok, 4, &need), REACT_OK, "");
    int64_t res[2] = {-1, -1};
    uint8_t refusals[64];
    EXPECT(react_control_accept(h, 1, ok, need, res, refusals, sizeof refusals, &got), REACT_OK, "");
    CHECK(res[0] == 0 && res[1] == 0 && got == 2 && memcmp(refusals, "[]", 2) == 0, "accept: %lld refused, resync %lld, %zu bytes",
          (long long)res[0], (long long)res[1], got);
    EXPECT(react_control_accept(h, 2, ok, 0, res, refusals, sizeof refusals, &got), REACT_E_STATE, "exchange 2");
    EXPECT(react_control_report(h, 0, NULL, 0, &need), REACT_E_SHORT, "needed");
    char* rep = malloc(need + 1);
    EXPECT(react_control_report(h, 0, (uint8_t*)rep, need, &got), REACT_OK, "");
    rep[got] = 0;
    CHECK(strstr(rep, "\"exchange\":1") && strstr(rep, "\"key\":[\"t\"]") && strstr(rep, "\"version\":0") &&
              strstr(rep, ": pattern version 0 at epoch 2 (tuner react)\\n") && strstr(rep, "\\nno changes\""),
          "report: %.200s", rep);
    EXPECT(react_control_offset(h, NAN), REACT_E_ARG, "offset");
    EXPECT(react_control_offset(h, 0.5), REACT_OK, "");
    char st[256];
    EXPECT(react_control_stats(h, (uint8_t*)st, sizeof st - 1, &got), REACT_OK, "");
    st[got] = 0;
    CHECK(strstr(st, "\"exchanges\":1") && strstr(st, "\"epoch\":3") && strstr(st, "\"tuned\":true"), "stats: %s", st);
    EXPECT(react_control_pattern(h, id, 0, NULL, 0, &need), REACT_E_SHORT, "needed");
    CHECK(need == len, "pattern of %zu bytes, want %zu", need, len);
    EXPECT(react_control_pattern(h, id, 1, NULL, 0, &need), REACT_E_ARG, "no version 1");
    EXPECT(react_control_close(other), REACT_OK, "");
    EXPECT(react_control_close(h), REACT_OK, "");
    EXPECT(react_control_close(h), REACT_E_HANDLE, "control handle");
    EXPECT(react_control_begin(h, id, &epoch, &version), REACT_E_HANDLE, "control handle");
    free(rep);
    free(body);
    free(row);
    free(arr);
    free(flows);
    free(p);
}

/* The leader names a key's FCT log from REACT_FCT_LOG's base and the key:
 * BASE.OP.DTYPE.NUMEL[.rootR].jsonl. */
static void test_control_log(void) {
    size_t len;
    uint8_t* p = generate("broadcast", "tree", 4, 2, &len);
    CHECK(p != NULL, "tree broadcast");
    if (!p) return;
    char dir[] = "/tmp/react-capi-XXXXXX", base[64], path[128];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(base, sizeof base, "%s/fct", dir);
    snprintf(path, sizeof path, "%s.broadcast.float32.4096.root2.jsonl", base);
    uint64_t h = 0;
    int id = -1;
    EXPECT(react_control_create("{\"batch\": 2, \"tuned\": true, \"leader\": true}", &h), REACT_OK, "");
    EXPECT(react_control_key(h, p, len, 4096, 4, "{\"key\": [\"t\"]}", base, &id), REACT_E_INVALID, "is not [op, dtype, numel, root]");
    EXPECT(react_control_key(h, p, len, 4096, 4, "{\"key\": [\"broadcast\", \"float32\", 4096, 2]}", base, &id), REACT_OK, "");
    CHECK(access(path, F_OK) == 0, "no FCT log at %s", path);
    EXPECT(react_control_close(h), REACT_OK, "");
    unlink(path);
    rmdir(dir);
    free(p);
}

/* ---- tuners through submit ----------------------------------------------- */

static void test_handles_unknown(void) {
    uint64_t unknown[] = {0, 987654321};
    size_t len;
    int64_t ver, eff;
    uint8_t b[4];
    for (int i = 0; i < 2; i++) {
        uint64_t h = unknown[i];
        EXPECT(react_tuner_close(h), REACT_E_HANDLE, "unknown or closed tuner handle");
        EXPECT(react_tuner_submit(h, b, 4), REACT_E_HANDLE, "unknown or closed");
        EXPECT(react_tuner_decision(h, &ver, &eff, b, 4, &len), REACT_E_HANDLE, "unknown or closed");
        EXPECT(react_tuner_report(h, b, 4, &len), REACT_E_HANDLE, "unknown or closed");
    }
}

/* The settings: every one with its variable and default; those marked
 * tuner are keys config_json takes; the check names a variable and its
 * value. */
static void test_settings(void) {
    size_t need = 0, got = 0;
    EXPECT(react_settings(NULL, 0, &need), REACT_E_SHORT, "buffer of 0 bytes");
    CHECK(need > 0, "settings need %zu bytes", need);
    EXPECT(react_settings(NULL, 0, NULL), REACT_E_ARG, "len must not be NULL");
    char* js = malloc(need + 1);
    EXPECT(react_settings((uint8_t*)js, need - 1, &got), REACT_E_SHORT, "needed");
    EXPECT(react_settings((uint8_t*)js, need, &got), REACT_OK, "");
    CHECK(got == need, "wrote %zu of %zu bytes", got, need);
    js[got] = 0;
    CHECK(js[0] == '[' && strstr(js, "{\"name\":\"KtGrowth\",\"var\":\"REACT_KT_GROWTH\",\"type\":\"int\",\"default\":") != NULL, "settings: %s", js);
    CHECK(strstr(js, "{\"name\":\"TauR\",\"var\":\"REACT_TAUR\",\"type\":\"float\",\"default\":") != NULL, "settings: %s", js);
    CHECK(strstr(js, "{\"name\":\"tune\",\"var\":\"REACT_TUNE\",\"type\":\"bool\",\"default\":true,") != NULL, "settings: %s", js);
    CHECK(strstr(js, "\"Stepped\"") == NULL, "a per-collective field listed: %s", js);
    free(js);

    /* a name react_settings marks tuner is one config_json takes */
    size_t plen;
    uint8_t* pat = generate("allreduce", "tree", 8, -1, &plen);
    uint64_t h = 0;
    EXPECT(react_tuner_create(pat, plen, MSG, "{\"KtGrowth\": 5, \"TauR\": 0.05}", &h), REACT_OK, "");
    EXPECT(react_tuner_close(h), REACT_OK, "");
    free(pat);

    char out[1024];
    EXPECT(react_settings_agree("[{}, {}, {}, {}]", 4, (uint8_t*)out, sizeof out, &got), REACT_OK, "");
    CHECK(got == 0, "defaults: %.*s", (int)got, out);
    EXPECT(react_settings_agree("[{\"leader\": 9, \"Lag\": 0}, {}]", 2, (uint8_t*)out, sizeof out - 1, &got), REACT_OK, "");
    out[got] = 0;
    CHECK(strstr(out, "rank 0: REACT_LEADER=9: the leader must be a rank of the group, 0 to 1") != NULL &&
              strstr(out, "rank 0: REACT_LAG=0: Lag = 0, want >= 1") != NULL, "check: %s", out);
    EXPECT(react_settings_agree(NULL, 4, (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "must not be NULL");

    EXPECT(react_settings_agree("[{}, {\"algo_allreduce\": \"tree\"}]", 2, (uint8_t*)out, sizeof out, &got), REACT_OK, "");
    CHECK(got == 0, "defaults and the default set: %.*s", (int)got, out);
    EXPECT(react_settings_agree("[{}, {\"algo_allreduce\": \"ring\"}]", 2, (uint8_t*)out, sizeof out - 1, &got), REACT_OK, "");
    out[got] = 0;
    CHECK(strstr(out, "REACT_ALGO_ALLREDUCE is \"tree\" on rank 0, \"ring\" on rank 1") != NULL, "agree: %s", out);
    EXPECT(react_settings_agree("[{}, 1]", 2, (uint8_t*)out, sizeof out, &got), REACT_E_INVALID, "not a JSON array of objects");
    EXPECT(react_settings_agree("[{}]", 2, (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "1 ranks' settings for a group of 2");

    EXPECT(react_settings_env("{\"REACT_LAG\": \"3\", \"REACT_TUNE\": \"off\", \"REACT_APP_X\": \"1\", \"REACT_LOG_LEVEL\": \"0\", \"HOME\": \"/\"}",
                              (uint8_t*)out, sizeof out - 1, &got), REACT_OK, "");
    out[got] = 0;
    CHECK(strstr(out, "\"Lag\":3") != NULL && strstr(out, "\"tune\":false") != NULL && strstr(out, "\"unknown\":[\"REACT_APP_X\"]") != NULL &&
              strstr(out, "\"log_level\":-1") != NULL && strstr(out, "HOME") == NULL, "env: %s", out);
    EXPECT(react_settings_env("{\"REACT_LAG\": \"soon\", \"REACT_GOMAXPROCS\": \"-1\"}", (uint8_t*)out, sizeof out - 1, &got), REACT_OK, "");
    out[got] = 0;
    CHECK(strstr(out, "REACT_LAG=\\\"soon\\\" is not a valid int for Lag") != NULL && strstr(out, "\"init_error\":\"REACT_GOMAXPROCS=-1") != NULL, "env problems: %s", out);
    EXPECT(react_settings_env("{\"REACT_LAG\": 3}", (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "not a JSON object of strings");
    EXPECT(react_settings_env(NULL, (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "must not be NULL");

    EXPECT(react_hosts_layout("[\"b\", \"a\", \"b\", \"a\", \"a\"]", "auto", (uint8_t*)out, sizeof out - 1, &got), REACT_OK, "");
    out[got] = 0;
    CHECK(strstr(out, "\"hosts\":[[0,2],[1,3,4]]") != NULL && strstr(out, "\"host_of\":[0,1,0,1,1]") != NULL &&
              strstr(out, "\"rails\":2") != NULL && strstr(out, "\"hier\":true") != NULL && strstr(out, "2 hosts of 2+3 ranks") != NULL,
          "layout: %s", out);
    EXPECT(react_hosts_layout("[\"h\", \"h\"]", "auto", (uint8_t*)out, sizeof out - 1, &got), REACT_OK, "");
    out[got] = 0;
    CHECK(strstr(out, "\"hier\":false") != NULL, "one host under auto: %s", out);
    EXPECT(react_hosts_layout("[\"h\"]", "rails", (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "hosts mode \"rails\", want auto, flat, hier");
    EXPECT(react_hosts_layout("[]", "auto", (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "no ranks");
}

static void test_calls(void) {
    int64_t sig[2 * REACT_CALL_FIELDS];
    uint32_t salt, salt2;
    int64_t digest, digest2;
    EXPECT(react_call_sign(5, "allreduce", "float32", 1000, -1, "sum", 4, 0, sig, &salt, &digest), REACT_OK, "");
    CHECK(salt < (1u << REACT_CALL_SALT_BITS) && digest >= 0, "salt %u, digest %lld", salt, (long long)digest);
    EXPECT(react_call_sign(5, "allreduce", "int32", 1000, -1, "sum", 4, 0, sig + REACT_CALL_FIELDS, &salt2, &digest2),
           REACT_OK, "");
    CHECK(salt2 != salt && digest2 != digest, "int32 and float32 calls alike");
    EXPECT(react_call_sign(5, "alltoall", "float32", 1000, -1, "sum", 4, 0, sig, &salt, &digest), REACT_E_ARG,
           "unknown op \"alltoall\"");
    EXPECT(react_call_sign(5, "allreduce", "float32", 1000, -1, "sum", 4, 0, NULL, &salt, &digest), REACT_E_ARG,
           "must not be NULL");
    EXPECT(react_call_sign(5, "allreduce", "float32", 1000, -1, "sum", 4, 0, sig, &salt, &digest), REACT_OK, "");

    int ranks[2] = {1, 0};
    char out[512];
    size_t got = 0;
    EXPECT(react_call_sentence(sig, ranks, 2, 3, NULL, 0, &got), REACT_E_SHORT, "");
    EXPECT(react_call_sentence(sig, ranks, 2, 3, (uint8_t*)out, sizeof out - 1, &got), REACT_OK, "");
    out[got] = 0;
    CHECK(strcmp(out, "rank 0: allreduce (sum) of 1000 int32, call 5 on the group, epoch 4 of its key, pattern version 0; "
                      "rank 1: allreduce (sum) of 1000 float32, call 5 on the group, epoch 4 of its key, pattern version 0") == 0,
          "sentence: %s", out);
    ranks[1] = 1;
    EXPECT(react_call_sentence(sig, ranks, 2, 3, (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "rank 1 given twice");
    ranks[1] = 3;
    EXPECT(react_call_sentence(sig, ranks, 2, 3, (uint8_t*)out, sizeof out, &got), REACT_E_ARG, "rank 3 of a group of 3");
}

static uint64_t create_tree8(uint8_t** pat, size_t* plen, pattern_view* v) {
    *pat = generate("allreduce", "tree", 8, -1, plen);
    read_pattern(*pat, *plen, v);
    uint64_t h = 0;
    EXPECT(react_tuner_create(*pat, *plen, MSG, "{\"B\": 6, \"Lag\": 5, \"label\": \"capi test\"}", &h), REACT_OK, "");
    return h;
}

static void test_tuner(void) {
    uint8_t* pat;
    size_t plen;
    pattern_view v;
    uint64_t h = 0;

    pat = generate("allreduce", "tree", 8, -1, &plen);
    EXPECT(react_tuner_create(pat, plen, MSG, NULL, NULL), REACT_E_ARG, "handle pointer is NULL");
    EXPECT(react_tuner_create(NULL, plen, MSG, NULL, &h), REACT_E_ARG, "NULL");
    EXPECT(react_tuner_create(pat, plen - 1, MSG, NULL, &h), REACT_E_INVALID, "");
    EXPECT(react_tuner_create(pat, plen, 0, NULL, &h), REACT_E_ARG, "message_bytes 0");
    EXPECT(react_tuner_create(pat, plen, NAN, NULL, &h), REACT_E_ARG, "message_bytes NaN");
    EXPECT(react_tuner_create(pat, plen, MSG, "{\"Bee\": 6}", &h), REACT_E_INVALID, "unknown setting \"Bee\"");
    EXPECT(react_tuner_create(pat, plen, MSG, "{\"kt_growth\": 6}", &h), REACT_E_INVALID, "did you mean \"KtGrowth\"?");
    EXPECT(react_tuner_create(pat, plen, MSG, "{\"label\": 6}", &h), REACT_E_INVALID, "label = 6, want a string");
    EXPECT(react_tuner_create(pat, plen, MSG, "[6]", &h), REACT_E_INVALID, "not a JSON object");
    EXPECT(react_tuner_create(pat, plen, MSG, "{\"B\": 6} {}", &h), REACT_E_INVALID, "data after the object");
    EXPECT(react_tuner_create(pat, plen, MSG, "{\"B\": \"six\"}", &h), REACT_E_INVALID, "config_json: tuner config: B = \"six\", want an integer");
    EXPECT(react_tuner_create(pat, plen, MSG, "{\"B\": 0}", &h), REACT_E_ARG, "B = 0");
    free(pat);

    h = create_tree8(&pat, &plen, &v);
    CHECK(h != 0, "handle 0");

    mp_buf m = {0};
    EXPECT(react_tuner_submit(h, NULL, 10), REACT_E_ARG, "batch buffer is NULL");
    EXPECT(react_tuner_submit(h, (const uint8_t*)"\xc0", 1), REACT_E_INVALID, "want a map, got nil");

    /* a batch for another pattern: 4 ranks, 12 flows */
    size_t p4len;
    uint8_t* p4 = generate("allreduce", "tree", 4, -1, &p4len);
    pattern_view v4;
    read_pattern(p4, p4len, &v4);
    make_batch(&m, &v4, 0, 0, 6, -1);
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_E_INVALID, "batch has 12 flows per epoch");
    free(p4);

    /* no decision yet */
    int64_t ver = -7, eff = -7;
    size_t len = 99;
    uint8_t small[16];
    EXPECT(react_tuner_decision(h, &ver, &eff, small, sizeof small, &len), REACT_NONE, "");
    CHECK(len == 0, "len %zu after REACT_NONE", len);
    EXPECT(react_tuner_decision(h, NULL, &eff, small, sizeof small, &len), REACT_E_ARG, "must not be NULL");
    EXPECT(react_tuner_decision(h, &ver, &eff, small, sizeof small, NULL), REACT_E_ARG, "must not be NULL");

    /* epochs 0..5 with rank 3 slow: one tuner batch, a new pattern */
    make_batch(&m, &v, 0, 0, 6, 3);
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_OK, "");

    len = 0;
    EXPECT(react_tuner_decision(h, &ver, &eff, NULL, 0, &len), REACT_E_SHORT, "needs");
    size_t need = len;
    CHECK(need > 100 && ver == 1 && eff == 10, "size query: len %zu version %lld effective %lld", need,
          (long long)ver, (long long)eff);
    EXPECT(react_tuner_decision(h, &ver, &eff, small, sizeof small, &len), REACT_E_SHORT, "needs");
    CHECK(len == need, "short buffer len %zu", len);
    uint8_t* dec = malloc(need);
    EXPECT(react_tuner_decision(h, &ver, &eff, dec, need, &len), REACT_OK, "");
    CHECK(len == need && ver == 1 && eff == 10, "decision len %zu version %lld effective %lld", len,
          (long long)ver, (long long)eff);
    EXPECT(check(dec, len), REACT_OK, "");
    pattern_view dv;
    CHECK(read_pattern(dec, len, &dv) == 0 && dv.nflows == v.nflows, "decided pattern readable");
    CHECK(memcmp(dv.src, v.src, 4 * v.nflows) != 0 || memcmp(dv.dst, v.dst, 4 * v.nflows) != 0,
          "decided pattern equals the initial one");
    EXPECT(react_tuner_decision(h, &ver, &eff, dec, need, &len), REACT_NONE, "");

    /* order and version */
    make_batch(&m, &v, 3, 0, 2, 3);
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_E_STATE, "not after the last epoch observed (5)");
    make_batch(&m, &v, 6, 1, 2, 3);
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_E_STATE, "epoch 6 runs pattern version 0, the batch says version 1");
    make_batch(&m, &v, 6, 0, 4, 3); /* epochs 6..9 on version 0 */
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_OK, "");
    make_batch(&m, &dv, 10, 1, 6, 3); /* the switch at epoch 10 */
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_OK, "");
    make_batch(&m, &dv, 15, 1, 1, 3);
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_E_STATE, "not after the last epoch observed (15)");

    /* the report: rank 3's downlink first, the change to version 1 */
    size_t rlen = 0;
    EXPECT(react_tuner_report(h, NULL, 0, NULL), REACT_E_ARG, "len must not be NULL");
    EXPECT(react_tuner_report(h, NULL, 0, &rlen), REACT_E_SHORT, "needed");
    size_t rneed = rlen;
    char* rep = malloc(rneed + 1);
    EXPECT(react_tuner_report(h, (uint8_t*)rep, rneed, &rlen), REACT_OK, "");
    rep[rlen] = 0;
    CHECK(rlen == rneed && strstr(rep, "\"links\":[{\"rank\":3,\"dir\":\"down\"") != NULL &&
              strstr(rep, "\"to\":1") != NULL && strstr(rep, "\"epoch\":15") != NULL && strstr(rep, "3<->") != NULL,
          "report %s", rep);
    free(rep);

    /* close, double close, use after close */
    EXPECT(react_tuner_close(h), REACT_OK, "");
    EXPECT(react_tuner_close(h), REACT_E_HANDLE, "unknown or closed");
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_E_HANDLE, "unknown or closed");
    EXPECT(react_tuner_decision(h, &ver, &eff, dec, need, &len), REACT_E_HANDLE, "unknown or closed");
    EXPECT(react_tuner_report(h, dec, need, &len), REACT_E_HANDLE, "unknown or closed");
    free(dec);
    free(m.b);
    free(pat);
}

/* ---- threads, fork ---------------------------------------------------------- */

typedef struct {
    int id;
    int ok;
} thread_arg;

static void* thread_errors(void* p) {
    thread_arg* a = p;
    char want[32], got[REACT_ERROR_MAX];
    snprintf(want, sizeof want, "op%d", a->id);
    a->ok = 1;
    for (int i = 0; i < 200; i++) {
        size_t len;
        if (react_pattern_generate(want, "tree", 4, -1, NULL, 0, &len) != REACT_E_ARG) a->ok = 0;
        sched_yield();
        if (react_last_error(got, sizeof got) != REACT_OK || !strstr(got, want)) a->ok = 0;
    }
    return NULL;
}

static void test_threads(void) {
    pthread_t t[4];
    thread_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i].id = i;
        pthread_create(&t[i], NULL, thread_errors, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(a[i].ok, "thread %d saw another thread's error", i);
    }
}

static void test_fork(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10); /* a hang here is the failure the guard prevents */
        char e[REACT_ERROR_MAX];
        int bad = 0;
        size_t len;
        if (react_abi_version() != REACT_E_FORK) bad |= 1;
        if (react_last_error(e, sizeof e) != REACT_OK || !strstr(e, "forked child")) bad |= 2;
        if (react_pattern_generate("allreduce", "tree", 4, -1, NULL, 0, &len) != REACT_E_FORK) bad |= 4;
        if (react_tuner_submit(1, (const uint8_t*)"x", 1) != REACT_E_FORK) bad |= 8;
        _exit(bad);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: exited %d status %d (bits: 1 abi, 2 message, 4 generate, 8 submit)",
          WIFEXITED(status), WEXITSTATUS(status));
    /* the parent is unaffected */
    CHECK(react_abi_version() == REACT_ABI_VERSION, "parent after fork");
}

static void test_log(const char* logfile) {
    FILE* f = fopen(logfile, "r");
    CHECK(f != NULL, "log file %s: %s", logfile, strerror(errno));
    if (!f) return;
    char line[4096];
    int created = 0, decision = 0;
    while (fgets(line, sizeof line, f)) {
        int tagged = strstr(line, "\"rank\":") && strstr(line, "\"pid\":");
        CHECK(tagged, "log line without rank and pid: %s", line);
        if (strstr(line, "tuner created") && strstr(line, "\"handle\":") && strstr(line, "\"version\":0")) created++;
        if (strstr(line, "\"msg\":\"decision\"") && strstr(line, "\"version\":") && strstr(line, "\"label\":\"capi test\""))
            decision++;
    }
    fclose(f);
    CHECK(created >= 2 && decision >= 2, "log: %d creations, %d decisions", created, decision);
}

/* ---- input that lies about its size ------------------------------------ */

/* A 2-rank allreduce (flow 0 reduces 0 -> 1 at step 1, flow 1 copies back
 * at step 2) whose header and column shapes claim nflows_claim flows and
 * ranks ranks; step1 replaces flow 1's step. */
static void lying_pattern(mp_buf* m, uint32_t nflows_claim, uint32_t ranks, int32_t step1) {
    int32_t chunk[2] = {0, 0}, step[2] = {1, step1}, src[2] = {0, 1}, dst[2] = {1, 0};
    uint8_t kind[2] = {1, 2};
    double frac[2] = {1.0, 1.0};
    struct { const char* name; const char* dtype; const void* data; uint32_t bytes; } cols[6] = {
        {"chunk", "<i4", chunk, 8}, {"step", "<i4", step, 8}, {"src", "<i4", src, 8},
        {"dst", "<i4", dst, 8},     {"kind", "|u1", kind, 2}, {"fraction", "<f8", frac, 16},
    };
    m->n = 0;
    mp_map(m, 7);
    mp_str(m, "format"); mp_str(m, "react.pattern/v1");
    mp_str(m, "op"); mp_str(m, "allreduce");
    mp_str(m, "algo"); mp_str(m, "tree");
    mp_str(m, "ranks"); mp_uint(m, ranks);
    mp_str(m, "root"); mp_byte(m, 0xff); /* -1 */
    mp_str(m, "nflows"); mp_byte(m, 0xce); mp_be(m, nflows_claim, 4);
    mp_str(m, "flows");
    mp_map(m, 6);
    for (int c = 0; c < 6; c++) {
        mp_str(m, cols[c].name);
        mp_map(m, 3);
        mp_str(m, "dtype"); mp_str(m, cols[c].dtype);
        mp_str(m, "shape"); mp_array(m, 1); mp_byte(m, 0xce); mp_be(m, nflows_claim, 4);
        mp_str(m, "data"); mp_bin(m, cols[c].data, cols[c].bytes);
    }
}

/* No input aborts the process: a pattern of 362 bytes claiming 2^31-1 flows
 * (issue 15's was 337 bytes; it made the decoder allocate 64 GiB) is malformed; 2^20 ranks, a step past REACT_MAX_STEPS and
 * generating past REACT_MAX_RANKS are REACT_E_LIMIT; the library goes on. */
static void test_limits(void) {
    mp_buf m = {0};
    size_t len = 0;
    uint64_t h = 0;

    lying_pattern(&m, 2, 2, 2);
    EXPECT(check(m.b, m.n), REACT_OK, "");

    lying_pattern(&m, 0x7fffffff, 2, 2);
    CHECK(m.n < 400, "the lying pattern is %zu bytes", m.n); /* a few hundred bytes claiming 64 GiB */
    EXPECT(check(m.b, m.n), REACT_E_INVALID, "data has 8 bytes, want 8589934588");
    EXPECT(react_pattern_layout(m.b, m.n, NULL, 0, &len), REACT_E_INVALID, "data has");
    EXPECT(react_tuner_create(m.b, m.n, MSG, NULL, &h), REACT_E_INVALID, "data has");

    lying_pattern(&m, 2, 1u << 20, 2);
    EXPECT(check(m.b, m.n), REACT_E_LIMIT, "at most 1024 ranks");
    EXPECT(react_tuner_create(m.b, m.n, MSG, NULL, &h), REACT_E_LIMIT, "at most 1024 ranks");
    lying_pattern(&m, 2, REACT_MAX_RANKS + 1, 2);
    EXPECT(check(m.b, m.n), REACT_E_LIMIT, "ranks");
    lying_pattern(&m, 2, 2, REACT_MAX_STEPS + 1);
    EXPECT(check(m.b, m.n), REACT_E_LIMIT, "at most 4096 steps");

    EXPECT(react_pattern_generate("allreduce", "tree", 1 << 20, -1, NULL, 0, &len), REACT_E_LIMIT, "at most 1024 ranks");
    EXPECT(react_pattern_generate("allgather", "ring", REACT_MAX_RANKS + 1, -1, NULL, 0, &len), REACT_E_LIMIT, "ranks");
    size_t n = 0;
    uint8_t* big = generate("allreduce", "tree", REACT_MAX_RANKS, -1, &n);
    CHECK(big != NULL, "tree at REACT_MAX_RANKS: %s", last_error());
    if (big) EXPECT(check(big, n), REACT_OK, "");
    free(big);

    /* an FCT batch claiming 2^31-1 epochs of 2^31-1 flows */
    uint8_t* p = generate("allreduce", "ring", 4, -1, &n);
    EXPECT(react_tuner_create(p, n, MSG, NULL, &h), REACT_OK, "");
    double one = 1e-3;
    m.n = 0;
    mp_map(&m, 7);
    mp_str(&m, "format"); mp_str(&m, "react.fcts/v1");
    mp_str(&m, "epoch0"); mp_uint(&m, 0);
    mp_str(&m, "version"); mp_uint(&m, 0);
    mp_str(&m, "epochs"); mp_uint(&m, 0x7fffffff);
    mp_str(&m, "nflows"); mp_uint(&m, 0x7fffffff);
    mp_str(&m, "fct"); mp_map(&m, 3); mp_str(&m, "dtype"); mp_str(&m, "<f8");
    mp_str(&m, "shape"); mp_array(&m, 2); mp_uint(&m, 0x7fffffff); mp_uint(&m, 0x7fffffff);
    mp_str(&m, "data"); mp_bin(&m, &one, 8);
    mp_str(&m, "elapsed"); mp_map(&m, 3); mp_str(&m, "dtype"); mp_str(&m, "<f8");
    mp_str(&m, "shape"); mp_array(&m, 1); mp_uint(&m, 0x7fffffff);
    mp_str(&m, "data"); mp_bin(&m, &one, 8);
    EXPECT(react_tuner_submit(h, m.b, m.n), REACT_E_INVALID, "more bytes than a message can hold");
    EXPECT(react_tuner_close(h), REACT_OK, "");
    free(p);
    free(m.b);
}

int main(int argc, char** argv) {
    const char* logfile = argc > 1 ? argv[1] : "capi_test.log";
    unlink(logfile);
    test_library(logfile);
    test_patterns();
    test_limits();
    test_layout();
    test_plan();
    test_control();
    test_control_log();
    test_handles_unknown();
    test_settings();
    test_calls();
    test_tuner();
    test_threads();
    test_fork();
    test_log(logfile);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
