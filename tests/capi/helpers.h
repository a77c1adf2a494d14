/*
 * helpers.h: what a C client of libreact writes for itself, from
 * docs/abi.md alone: a small msgpack writer for FCT batches and a reader
 * for the pattern's columns. Shared by the C test and the C benchmark;
 * header-only (static functions).
 */
#ifndef REACT_TEST_HELPERS_H
#define REACT_TEST_HELPERS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- msgpack writer ------------------------------------------------------ */

typedef struct {
    uint8_t* b;
    size_t n, cap;
} mp_buf;

static inline void mp_put(mp_buf* m, const void* p, size_t n) {
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2 + 64;
        m->b = realloc(m->b, m->cap);
    }
    memcpy(m->b + m->n, p, n);
    m->n += n;
}
static inline void mp_byte(mp_buf* m, uint8_t c) { mp_put(m, &c, 1); }
static inline void mp_be(mp_buf* m, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) mp_byte(m, (uint8_t)(v >> (8 * i)));
}
static inline void mp_map(mp_buf* m, uint32_t n) {
    if (n < 16) mp_byte(m, 0x80 | n);
    else { mp_byte(m, 0xde); mp_be(m, n, 2); }
}
static inline void mp_array(mp_buf* m, uint32_t n) {
    if (n < 16) mp_byte(m, 0x90 | n);
    else { mp_byte(m, 0xdc); mp_be(m, n, 2); }
}
static inline void mp_str(mp_buf* m, const char* s) {
    size_t n = strlen(s);
    if (n < 32) mp_byte(m, 0xa0 | (uint8_t)n);
    else { mp_byte(m, 0xd9); mp_byte(m, (uint8_t)n); }
    mp_put(m, s, n);
}
static inline void mp_uint(mp_buf* m, uint64_t v) {
    if (v < 128) mp_byte(m, (uint8_t)v);
    else if (v < 65536) { mp_byte(m, 0xcd); mp_be(m, v, 2); }
    else if (v < 4294967296ull) { mp_byte(m, 0xce); mp_be(m, v, 4); }
    else { mp_byte(m, 0xcf); mp_be(m, v, 8); }
}
static inline void mp_bin(mp_buf* m, const void* p, uint32_t n) {
    mp_byte(m, 0xc6);
    mp_be(m, n, 4);
    mp_put(m, p, n);
}

/* An "<f8" column; host doubles are little-endian IEEE 754 here. */
static inline void mp_f8_column(mp_buf* m, const double* v, uint32_t rows, uint32_t cols) {
    mp_map(m, 3);
    mp_str(m, "dtype");
    mp_str(m, "<f8");
    mp_str(m, "shape");
    if (cols) { mp_array(m, 2); mp_uint(m, rows); mp_uint(m, cols); }
    else { mp_array(m, 1); mp_uint(m, rows); }
    mp_str(m, "data");
    mp_bin(m, v, (uint32_t)(8u * rows * (cols ? cols : 1)));
}

/* Encodes an FCT batch ("react.fcts/v1") into m (reset first). */
static inline void mp_batch(mp_buf* m, int64_t epoch0, int64_t version, uint32_t epochs, uint32_t nflows,
                     const double* fct, const double* elapsed) {
    m->n = 0;
    mp_map(m, 7);
    mp_str(m, "format"); mp_str(m, "react.fcts/v1");
    mp_str(m, "epoch0"); mp_uint(m, (uint64_t)epoch0);
    mp_str(m, "version"); mp_uint(m, (uint64_t)version);
    mp_str(m, "epochs"); mp_uint(m, epochs);
    mp_str(m, "nflows"); mp_uint(m, nflows);
    mp_str(m, "fct"); mp_f8_column(m, fct, epochs, nflows);
    mp_str(m, "elapsed"); mp_f8_column(m, elapsed, epochs, 0);
}

/* ---- msgpack reader: just enough for a pattern's columns -------------------- */

typedef struct {
    const uint8_t* p;
    const uint8_t* end;
    int bad;
} mp_rd;

static inline uint64_t rd_be(mp_rd* r, int bytes) {
    uint64_t v = 0;
    if (r->end - r->p < bytes) { r->bad = 1; return 0; }
    for (int i = 0; i < bytes; i++) v = v << 8 | *r->p++;
    return v;
}
static inline uint8_t rd_code(mp_rd* r) {
    if (r->p >= r->end) { r->bad = 1; return 0xc1; }
    return *r->p++;
}
/* Reads a map or array header; returns the count. */
static inline uint32_t rd_len(mp_rd* r, int* is_map) {
    uint8_t c = rd_code(r);
    if ((c & 0xf0) == 0x80) { *is_map = 1; return c & 0x0f; }
    if ((c & 0xf0) == 0x90) { *is_map = 0; return c & 0x0f; }
    if (c == 0xde || c == 0xdc) { *is_map = c == 0xde; return (uint32_t)rd_be(r, 2); }
    if (c == 0xdf || c == 0xdd) { *is_map = c == 0xdf; return (uint32_t)rd_be(r, 4); }
    r->bad = 1;
    return 0;
}
/* Reads a str or bin; returns its bytes in place. */
static inline const uint8_t* rd_bytes(mp_rd* r, uint32_t* n) {
    uint8_t c = rd_code(r);
    if ((c & 0xe0) == 0xa0) *n = c & 0x1f;
    else if (c == 0xd9 || c == 0xc4) *n = (uint32_t)rd_be(r, 1);
    else if (c == 0xda || c == 0xc5) *n = (uint32_t)rd_be(r, 2);
    else if (c == 0xdb || c == 0xc6) *n = (uint32_t)rd_be(r, 4);
    else { r->bad = 1; *n = 0; return NULL; }
    if ((size_t)(r->end - r->p) < *n) { r->bad = 1; return NULL; }
    const uint8_t* s = r->p;
    r->p += *n;
    return s;
}
static inline int64_t rd_int(mp_rd* r) {
    uint8_t c = rd_code(r);
    if (c < 0x80) return c;
    if (c >= 0xe0) return (int8_t)c;
    switch (c) {
    case 0xcc: return (int64_t)rd_be(r, 1);
    case 0xcd: return (int64_t)rd_be(r, 2);
    case 0xce: return (int64_t)rd_be(r, 4);
    case 0xcf: return (int64_t)rd_be(r, 8);
    case 0xd0: return (int8_t)rd_be(r, 1);
    case 0xd1: return (int16_t)rd_be(r, 2);
    case 0xd2: return (int32_t)rd_be(r, 4);
    case 0xd3: return (int64_t)rd_be(r, 8);
    }
    r->bad = 1;
    return 0;
}
static inline void rd_skip(mp_rd* r) {
    uint8_t c = *r->p;
    if ((c & 0xf0) == 0x80 || (c & 0xf0) == 0x90 || (c >= 0xdc && c <= 0xdf)) {
        int is_map;
        uint32_t n = rd_len(r, &is_map);
        for (uint64_t i = 0; i < (uint64_t)n * (is_map ? 2 : 1) && !r->bad; i++) rd_skip(r);
    } else if ((c & 0xe0) == 0xa0 || c == 0xd9 || c == 0xda || c == 0xdb || (c >= 0xc4 && c <= 0xc6)) {
        uint32_t n;
        rd_bytes(r, &n);
    } else if (c == 0xc0 || c == 0xc2 || c == 0xc3) {
        r->p++;
    } else if (c == 0xca) { r->p += 5; }
    else if (c == 0xcb) { r->p += 9; }
    else rd_int(r);
}
static inline int rd_key_is(const uint8_t* k, uint32_t n, const char* s) {
    return n == strlen(s) && memcmp(k, s, n) == 0;
}

/* A pattern as the test needs it. */
typedef struct {
    int64_t ranks, nflows;
    const uint8_t* src; /* nflows little-endian int32 */
    const uint8_t* dst;
    const uint8_t* fraction; /* nflows little-endian float64 */
} pattern_view;

static inline int32_t le_i32(const uint8_t* p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}
static inline double le_f64(const uint8_t* p) {
    double d;
    memcpy(&d, p, 8);
    return d;
}

/* Reads the header and three columns of a msgpack pattern in place. */
static inline int read_pattern(const uint8_t* b, size_t n, pattern_view* v) {
    mp_rd r = {b, b + n, 0};
    memset(v, 0, sizeof *v);
    int is_map;
    uint32_t keys = rd_len(&r, &is_map);
    if (!is_map) return -1;
    for (uint32_t i = 0; i < keys && !r.bad; i++) {
        uint32_t kn;
        const uint8_t* k = rd_bytes(&r, &kn);
        if (r.bad) break;
        if (rd_key_is(k, kn, "ranks")) v->ranks = rd_int(&r);
        else if (rd_key_is(k, kn, "nflows")) v->nflows = rd_int(&r);
        else if (rd_key_is(k, kn, "flows")) {
            uint32_t cols = rd_len(&r, &is_map);
            for (uint32_t c = 0; c < cols && !r.bad; c++) {
                uint32_t cn;
                const uint8_t* name = rd_bytes(&r, &cn);
                uint32_t fields = rd_len(&r, &is_map);
                for (uint32_t f = 0; f < fields && !r.bad; f++) {
                    uint32_t fn;
                    const uint8_t* field = rd_bytes(&r, &fn);
                    if (rd_key_is(field, fn, "data")) {
                        uint32_t dn;
                        const uint8_t* data = rd_bytes(&r, &dn);
                        if (rd_key_is(name, cn, "src")) v->src = data;
                        if (rd_key_is(name, cn, "dst")) v->dst = data;
                        if (rd_key_is(name, cn, "fraction")) v->fraction = data;
                    } else rd_skip(&r);
                }
            }
        } else rd_skip(&r);
    }
    return r.bad || !v->src || !v->dst || !v->fraction || v->nflows <= 0 ? -1 : 0;
}

/* FCTs of epochs epochs: a flow's bytes over 10 GB/s, flows into rank slow
 * (none when slow < 0) three times slower, with 1% deterministic jitter. */
static inline void synth_fcts(const pattern_view* v, double message_bytes, int64_t epoch0, int epochs, int slow,
                       double* fct, double* elapsed) {
    for (int e = 0; e < epochs; e++) {
        for (int64_t i = 0; i < v->nflows; i++) {
            double t = message_bytes * le_f64(v->fraction + 8 * i) / 10e9;
            if (le_i32(v->dst + 4 * i) == slow) t *= 3;
            fct[e * v->nflows + i] = t * (1 + 0.01 * (double)(((epoch0 + e) * 7 + i * 3) % 5));
        }
        elapsed[e] = 0; /* not measured: the tuner takes the critical path */
    }
}

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
