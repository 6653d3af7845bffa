/* The optional compiled scanner of the Chrome loader: one run of traceEvents elements ("[e, e, ...]") straight
 * into columns, without a Python object per event.
 *
 * scan(text) reads the top-level fields every event has (ph, name, cat, pid, tid, ts, dur, and the types of id,
 * s, bp, args) and gives back, per event: the phase character, chunk-local ids of the name, the category and the
 * (pid, tid) pair (interned by their JSON text), ts and dur both as the correctly rounded double (what a float
 * decoder gives) and as exact int64 ns of the decimal text (rounded half to even), and the byte spans of the
 * element (kept only for the rare events the Python side decodes one by one). Of the args, the ones every event
 * of a kind carries are read here: the ids (correlation, External id, device), record_shapes' operator args
 * (Sequence number, Fwd thread id, and Input Dims / Input type as chunk-local ids of their texts, printed as the
 * Python path prints them), a kernel's launch args (grid, block, registers per thread, shared memory, blocks and
 * warps per SM, est. achieved occupancy %) and a copy's bytes, each in its plain form only. An args object holding
 * any other key the Python side reads, or one of these in another form, is handed over whole, and the Python side
 * decodes those with msgspec, so an args field added to the Python structs works on this path too.
 *
 * scan(text, prefix=True) reads a window of the stream instead: "[" and then elements, the last one possibly cut by
 * the end of the window; the complete elements are scanned, "end" says where they end, and what the cut one wrote
 * is rolled back.
 *
 * It returns None for anything it does not read exactly like msgspec's typed decoding of the same bytes would:
 * malformed JSON, a cut inside an element, invalid UTF-8 or lone surrogates, NaN, numbers beyond int64 in pid or
 * tid, exponents in ts/dur, a field of another type, phases longer than one character, duplicate keys, deep
 * nesting. The caller then decodes the chunk with the pure-Python path (the reference), so every recovery and
 * repair rule stays in one place. The scan runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_SSE2 1
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LITTLE_ENDIAN_WORDS 1
#endif

#define MAX_DEPTH 48
#define MAX_ABS_NS 4611686018427387904LL /* 2**62 */
#define MAX_INT_US 4611686018427387LL
#define T_OK 0
#define T_MISSING 1
#define T_FAR 2
/* the form of an event's id, and of its bp */
#define ID_NONE 0 /* absent or null */
#define ID_INT 1
#define ID_TEXT 2 /* a string: the Python side decodes the element for it */
#define BP_OTHER 0
#define BP_E 1    /* "e" (a flow end bound to the enclosing slice) */
#define BP_ESCAPED 2 /* written with escapes: the Python side decodes the element */
/* the category of CUPTI range-profiler ranges, as JSON text (parsers/chrome/conventions.py) */
#define PROFILER_RANGE_CAT "\"cuda_profiler_range\""

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int buf_grow(Buf *b, Py_ssize_t n) {
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

/* A pool of the columns' memory, reused from one scan to the next. A scan writes its columns into memory that,
 * once freed, the C library gives back to the system (blocks this large are mapped and unmapped on their own),
 * so every scan would touch fresh pages again, and a first touch is a page fault: on a virtual machine, where
 * faults are slow, that was a third of a scan. The columns handed to Python (Block) come back here when Python
 * drops them, so a load touches about as much memory as the chunks in flight hold. trim() frees what the pool
 * keeps (the loader calls it when a file is read). The pool is shared by the scanning threads (a lock of its
 * own; no GIL needed). Sizes in bytes. */
#define POOL_MAX 512
#define POOL_MIN_BLOCK (64 << 10)
#define POOL_MAX_BYTES ((Py_ssize_t)256 << 20)
static PyThread_type_lock pool_lock;
static char *pool_ptr[POOL_MAX];
static Py_ssize_t pool_cap[POOL_MAX];
static int pool_n = 0;
static Py_ssize_t pool_bytes = 0;

/* a pooled block of at least need bytes (and not much more), or NULL */
static char *pool_take(Py_ssize_t need, Py_ssize_t *cap) {
    char *got = NULL;
    if (need < POOL_MIN_BLOCK) return NULL;
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    int best = -1;
    for (int i = 0; i < pool_n; i++)
        if (pool_cap[i] >= need && pool_cap[i] <= 4 * need && (best < 0 || pool_cap[i] < pool_cap[best])) best = i;
    if (best >= 0) {
        got = pool_ptr[best];
        *cap = pool_cap[best];
        pool_bytes -= pool_cap[best];
        pool_n--;
        pool_ptr[best] = pool_ptr[pool_n];
        pool_cap[best] = pool_cap[pool_n];
    }
    PyThread_release_lock(pool_lock);
    return got;
}

/* give a block back: kept for the next scan, or freed */
static void pool_give(char *data, Py_ssize_t cap) {
    if (!data) return;
    if (cap >= POOL_MIN_BLOCK) {
        PyThread_acquire_lock(pool_lock, WAIT_LOCK);
        int kept = pool_n < POOL_MAX && pool_bytes + cap <= POOL_MAX_BYTES;
        if (kept) {
            pool_ptr[pool_n] = data;
            pool_cap[pool_n++] = cap;
            pool_bytes += cap;
        }
        PyThread_release_lock(pool_lock);
        if (kept) return;
    }
    free(data);
}

/* room for at least cap bytes (no copy when it is already there; an empty Buf takes a pooled block) */
static int buf_reserve(Buf *b, Py_ssize_t cap) {
    if (cap <= b->cap) return 0;
    if (!b->data) {
        Py_ssize_t got_cap;
        char *got = pool_take(cap, &got_cap);
        if (got) {
            b->data = got;
            b->cap = got_cap;
            return 0;
        }
    }
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

/* append n bytes (inlined: most calls put one value of a fixed size) */
static inline int buf_put(Buf *b, const void *p, Py_ssize_t n) {
    if (b->len + n > b->cap && buf_grow(b, n)) return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

/* interner: key bytes -> dense id in first-seen order */
typedef struct {
    Buf keys;      /* all keys, back to back */
    Buf offs;      /* int64 offsets of key starts (n + 1 entries at the end) */
    int32_t *slots; /* id + 1, 0 = empty */
    uint64_t *hashes;
    Py_ssize_t cap, n;
} Interner;

/* a hash of the key bytes, eight at a time (names of C++ kernels run to hundreds of bytes) */
static uint64_t hash_bytes(const unsigned char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
    }
    for (; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    h ^= h >> 32;
    return h;
}

static int interner_init(Interner *t) {
    memset(t, 0, sizeof(*t));
    t->cap = 256;
    t->slots = calloc(t->cap, sizeof(int32_t));
    t->hashes = calloc(t->cap, sizeof(uint64_t));
    int64_t zero = 0;
    if (!t->slots || !t->hashes || buf_put(&t->offs, &zero, sizeof zero)) return -1;
    return 0;
}

static void interner_free(Interner *t) {
    free(t->keys.data); free(t->offs.data); free(t->slots); free(t->hashes);
}

static const char *key_at(Interner *t, int32_t id, Py_ssize_t *n) {
    int64_t *o = (int64_t *)t->offs.data;
    *n = (Py_ssize_t)(o[id + 1] - o[id]);
    return t->keys.data + o[id];
}

static int interner_grow(Interner *t) {
    Py_ssize_t cap = t->cap * 2;
    int32_t *slots = calloc(cap, sizeof(int32_t));
    uint64_t *hashes = calloc(cap, sizeof(uint64_t));
    if (!slots || !hashes) { free(slots); free(hashes); return -1; }
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        Py_ssize_t j = (Py_ssize_t)(t->hashes[i] & (uint64_t)(cap - 1));
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    free(t->slots); free(t->hashes);
    t->slots = slots; t->hashes = hashes; t->cap = cap;
    return 0;
}

/* the id of a key made of up to two parts (a, then an optional \x01 and b) */
static int32_t intern2(Interner *t, const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb) {
    uint64_t h = hash_bytes((const unsigned char *)a, na);
    if (b) { h ^= 0x9e3779b97f4a7c15ULL; h *= 1099511628211ULL; h ^= hash_bytes((const unsigned char *)b, nb); }
    Py_ssize_t total = na + (b ? nb + 1 : 0);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(t->cap - 1));
    while (t->slots[j]) {
        if (t->hashes[j] == h) {
            Py_ssize_t kn;
            const char *k = key_at(t, t->slots[j] - 1, &kn);
            if (kn == total && memcmp(k, a, na) == 0 &&
                (!b || (k[na] == '\x01' && memcmp(k + na + 1, b, nb) == 0)))
                return t->slots[j] - 1;
        }
        j = (j + 1) & (t->cap - 1);
    }
    int32_t id = (int32_t)t->n;
    if (buf_put(&t->keys, a, na)) return -1;
    if (b) { char sep = '\x01'; if (buf_put(&t->keys, &sep, 1) || buf_put(&t->keys, b, nb)) return -1; }
    int64_t off = (int64_t)t->keys.len;
    if (buf_put(&t->offs, &off, sizeof off)) return -1;
    t->slots[j] = id + 1;
    t->hashes[j] = h;
    t->n++;
    if (t->n * 2 > t->cap && interner_grow(t)) return -1;
    return id;
}

typedef struct {
    const unsigned char *p, *end;
} Cur;

/* the args keys the Python side reads (Args' field names), set by configure(); an args object holding one of
 * them (other than the three read here) is decoded by msgspec, the others are not decoded at all */
#define MAX_WANTED 256
static char *wanted[MAX_WANTED];
static Py_ssize_t wanted_len[MAX_WANTED];
static int n_wanted = 0;

/* per first byte, a bit per key length (mod 64) of the wanted keys: most keys are rejected without a loop */
static uint64_t want_mask[256];

static int is_wanted(const unsigned char *k, Py_ssize_t n) {
    if (n == 0 || !((want_mask[k[0]] >> (n & 63)) & 1)) return 0;
    for (int i = 0; i < n_wanted; i++)
        if (wanted_len[i] == n && wanted[i][0] == (char)k[0] && !memcmp(wanted[i], k, n)) return 1;
    return 0;
}

static inline void ws(Cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

static int hexval(unsigned char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* a JSON string at c->p (the opening quote); on success c->p is after the closing quote. *escaped says whether
 * it held escapes. Invalid UTF-8, control characters, bad escapes and lone surrogates fail (-1). */
/* the bytes a string holds as they are: printable ASCII other than the quote and the backslash */
static unsigned char PLAIN[256];

static void init_plain(void) {
    for (int ch = 0x20; ch < 0x80; ch++) PLAIN[ch] = ch != '"' && ch != '\\';
}

static int scan_string(Cur *c, int *escaped) {
    const unsigned char *p = c->p + 1, *end = c->end;
    *escaped = 0;
    while (p < end) {
#ifdef HAVE_SSE2
        /* sixteen bytes at a time to the first that is not plain: the quote, the backslash, a control character
         * or a byte of a UTF-8 sequence (below 0x20 or from 0x80, as a signed byte: below 0x20) */
        {
            const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), low = _mm_set1_epi8(0x20);
            while (end - p >= 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)p);
                __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                            _mm_cmplt_epi8(v, low));
                unsigned m = (unsigned)_mm_movemask_epi8(stop);
                if (m) { p += __builtin_ctz(m); break; }
                p += 16;
            }
        }
#endif
        while (p + 4 <= end && PLAIN[p[0]] && PLAIN[p[1]] && PLAIN[p[2]] && PLAIN[p[3]]) p += 4;
        while (p < end && PLAIN[*p]) p++;
        if (p >= end) break;
        unsigned char ch = *p;
        if (ch == '"') { c->p = p + 1; return 0; }
        if (ch < 0x20) return -1;
        if (ch == '\\') {
            *escaped = 1;
            if (p + 1 >= end) return -1;
            unsigned char e = p[1];
            if (e == 'u') {
                if (p + 6 > end) return -1;
                int v = 0;
                for (int i = 2; i < 6; i++) { int h = hexval(p[i]); if (h < 0) return -1; v = v * 16 + h; }
                p += 6;
                if (v >= 0xD800 && v <= 0xDBFF) { /* must be followed by a low surrogate */
                    if (p + 6 > end || p[0] != '\\' || p[1] != 'u') return -1;
                    int w = 0;
                    for (int i = 2; i < 6; i++) { int h = hexval(p[i]); if (h < 0) return -1; w = w * 16 + h; }
                    if (w < 0xDC00 || w > 0xDFFF) return -1;
                    p += 6;
                } else if (v >= 0xDC00 && v <= 0xDFFF) {
                    return -1;
                }
                continue;
            }
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
                continue;
            }
            return -1;
        }
        if (ch < 0x80) { p++; continue; }
        /* UTF-8 sequence */
        int n;
        uint32_t cp;
        if (ch >= 0xC2 && ch <= 0xDF) { n = 1; cp = ch & 0x1F; }
        else if (ch >= 0xE0 && ch <= 0xEF) { n = 2; cp = ch & 0x0F; }
        else if (ch >= 0xF0 && ch <= 0xF4) { n = 3; cp = ch & 0x07; }
        else return -1;
        if (p + n >= end) return -1;
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return -1;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return -1;
        p += n + 1;
    }
    return -1;
}

typedef struct {
    int neg, has_frac, has_exp;
    int int_digits, frac_digits;
    uint64_t ip;       /* integer part (valid when int_digits <= 19) */
    int64_t f3;        /* first three fraction digits, as ns */
    int r, sticky;     /* the fourth fraction digit, any nonzero digit after it */
    uint64_t mant;     /* all digits (valid when int_digits + frac_digits <= 19) */
} Num;

/* a JSON number's grammar, with the parts the conversions need */
/* the exponent at p ('e' or 'E', a sign, digits): the byte after it, NULL when it is malformed */
static const unsigned char *skip_exponent(const unsigned char *p, const unsigned char *end) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p >= end || *p < '0' || *p > '9') return NULL;
    while (p < end && *p >= '0' && *p <= '9') p++;
    return p;
}

/* whether the 8 bytes at p are all ASCII digits; if so *v is their value (the first byte the most significant
 * digit). The bytes are one little-endian word: two digits to a 16-bit lane, then four to a 32-bit lane, then
 * eight (no lane carries into the next: 10*9+9, 100*99+99 and 10000*9999+9999 fit their lanes). */
static inline int eight_digits(const unsigned char *p, uint64_t *v) {
#ifdef LITTLE_ENDIAN_WORDS
    uint64_t w;
    memcpy(&w, p, 8);
    /* every byte 0x30-0x3f, and adding 6 leaves it below 0x40 (so it is at most 0x39) */
    if ((w & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL ||
        ((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL)
        return 0;
    w -= 0x3030303030303030ULL;
    w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFULL;
    w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFULL;
    w = (w * 10000 + (w >> 32)) & 0xFFFFFFFFULL;
    *v = w;
    return 1;
#else
    (void)p;
    (void)v;
    return 0;
#endif
}

static int scan_number(Cur *c, Num *n) {
    const unsigned char *p = c->p, *end = c->end;
    memset(n, 0, sizeof *n);
    if (p < end && *p == '-') { n->neg = 1; p++; }
    if (p >= end) return -1;
    if (*p == '0') {
        p++;
        n->int_digits = 1;
        if (p < end && *p >= '0' && *p <= '9') return -1; /* leading zero */
    } else if (*p >= '1' && *p <= '9') {
        uint64_t eight;
        /* (eight at a time while the digits stay within 19: the same sums as one at a time, below 10**19) */
        while (n->int_digits <= 11 && end - p >= 8 && eight_digits(p, &eight)) {
            n->ip = n->ip * 100000000ULL + eight;
            n->mant = n->mant * 100000000ULL + eight;
            n->int_digits += 8;
            p += 8;
        }
        while (p < end && *p >= '0' && *p <= '9') {
            if (n->int_digits < 19) { n->ip = n->ip * 10 + (*p - '0'); n->mant = n->mant * 10 + (*p - '0'); }
            n->int_digits++;
            p++;
        }
    } else {
        return -1;
    }
    if (p < end && *p == '.') {
        p++;
        n->has_frac = 1;
        if (p >= end || *p < '0' || *p > '9') return -1;
        while (p < end && *p >= '0' && *p <= '9') {
            int d = *p - '0';
            n->frac_digits++;
            if (n->frac_digits <= 3) n->f3 = n->f3 * 10 + d;
            else if (n->frac_digits == 4) n->r = d;
            else if (d) n->sticky = 1;
            if (n->int_digits + n->frac_digits <= 19) n->mant = n->mant * 10 + d;
            p++;
        }
    }
    for (int k = n->frac_digits; k < 3; k++) n->f3 *= 10;
    n->has_exp = p < end && (*p == 'e' || *p == 'E');
    if (n->has_exp && !(p = skip_exponent(p, end))) return -1;
    c->p = p;
    return 0;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* the correctly rounded double of the number text at [s, e) */
static double num_double(const Num *n, const unsigned char *s, const unsigned char *e) {
    if (!n->has_exp && n->int_digits + n->frac_digits <= 19 && n->mant <= (1ULL << 53) && n->frac_digits <= 22) {
        double d = (double)n->mant / POW10[n->frac_digits];
        return n->neg ? -d : d;
    }
    char tmp[64];
    Py_ssize_t len = e - s;
    if (len < (Py_ssize_t)sizeof tmp) {
        memcpy(tmp, s, len);
        tmp[len] = 0;
        return strtod(tmp, NULL);
    }
    char *big = malloc(len + 1);
    if (!big) return NAN;
    memcpy(big, s, len);
    big[len] = 0;
    double d = strtod(big, NULL);
    free(big);
    return d;
}

/* exact ns of a plain number (no exponent: the caller refuses those), rounded half to even */
static int64_t num_ns(const Num *n, uint8_t *state) {
    if (n->int_digits > 16 || n->ip > (uint64_t)MAX_INT_US) { *state = T_FAR; return INT64_MIN; }
    int64_t trunc = (int64_t)n->ip * 1000 + n->f3;
    if (trunc > MAX_ABS_NS || (trunc == MAX_ABS_NS && (n->r || n->sticky))) { *state = T_FAR; return INT64_MIN; }
    int up = n->r > 5 || (n->r == 5 && (n->sticky || (trunc & 1)));
    int64_t mag = trunc + up;
    *state = T_OK;
    return n->neg ? -mag : mag;
}

/* a JSON number's grammar only (what scan_number accepts, without its parts) */
static int skip_number(Cur *c) {
    const unsigned char *p = c->p, *end = c->end;
    if (p < end && *p == '-') p++;
    if (p >= end) return -1;
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9') return -1;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return -1;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') return -1;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E') && !(p = skip_exponent(p, end))) return -1;
    c->p = p;
    return 0;
}

static int skip_value(Cur *c, int depth);

static int skip_container(Cur *c, int depth, unsigned char close) {
    if (depth > MAX_DEPTH) return -1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == close) { c->p++; return 0; }
    for (;;) {
        if (close == '}') {
            int esc;
            if (c->p >= c->end || *c->p != '"' || scan_string(c, &esc)) return -1;
            ws(c);
            if (c->p >= c->end || *c->p != ':') return -1;
            c->p++;
            ws(c);
        }
        if (skip_value(c, depth + 1)) return -1;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; ws(c); continue; }
        if (*c->p == close) { c->p++; return 0; }
        return -1;
    }
}

static int skip_value(Cur *c, int depth) {
    if (c->p >= c->end) return -1;
    unsigned char ch = *c->p;
    int esc;
    switch (ch) {
    case '"': return scan_string(c, &esc);
    case '{': return skip_container(c, depth, '}');
    case '[': return skip_container(c, depth, ']');
    case 't': if (c->end - c->p >= 4 && !memcmp(c->p, "true", 4)) { c->p += 4; return 0; } return -1;
    case 'f': if (c->end - c->p >= 5 && !memcmp(c->p, "false", 5)) { c->p += 5; return 0; } return -1;
    case 'n': if (c->end - c->p >= 4 && !memcmp(c->p, "null", 4)) { c->p += 4; return 0; } return -1;
    default: return skip_number(c);
    }
}

/* output columns */
typedef struct {
    Buf ph, name, cat, src, ts_d, ts_ns, ts_st, dur_d, dur_ns, dur_st, el_at, el_len, args_json;
    Buf rare; /* the bytes of the elements the Python side may decode one by one (see scan_event) */
    Buf corr, ext, dev, need;
    Buf seq, fwd, dims, types; /* record_shapes: Sequence number, Fwd thread id (int64), Input Dims / Input type ids */
    Buf fid, fid_kind, bp;     /* flows: the id (int64), its form (ID_*), bp (BP_*) */
    Buf k_row, k_ints, k_floats, k_dims, has_grid; /* kernels and copies, one row per event that has any of these
                                               args (k_row: the event's index, int32): registers, shared memory,
                                               bytes (int64 x 3), blocks/warps per SM, occupancy (double x 3), grid
                                               and block (int64 x 6), whether the grid was read (uint8) */
    Buf scratch;               /* the canonical text of one Input Dims / Input type value */
    Py_ssize_t n_args;
} Out;

/* a text holds at most one event per this many bytes, as a rule (an event with its name, ts, dur, pid and tid
 * takes more): the per-event columns are given room for that many events up front, so that they do not grow
 * while the scan runs (each growth would copy a column into fresh memory). Room not written is never touched, so
 * it costs no memory while the columns are in use; but once they are freed, the C library hands that room out
 * again, and whoever writes there next takes the page faults (the loader's arrays after the scan: on a trace of
 * 380 bytes an event, five sixths of every column was such room). So after the first text, the room follows the
 * bytes per event seen in the previous one (half of them: twice the events, before a column has to grow). */
#define EST_EVENT_BYTES 64
/* bytes per event of the last text scanned (0: none yet); read and written under pool_lock */
static Py_ssize_t seen_event_bytes = 0;

static int out_reserve(Out *o, Py_ssize_t text_len) {
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    Py_ssize_t per = seen_event_bytes / 2;
    PyThread_release_lock(pool_lock);
    Py_ssize_t n = text_len / (per > EST_EVENT_BYTES ? per : EST_EVENT_BYTES) + 64;
    Buf *one[] = {&o->ph, &o->ts_st, &o->dur_st, &o->need, &o->fid_kind, &o->bp};
    Buf *four[] = {&o->name, &o->cat, &o->src, &o->el_len, &o->dims, &o->types};
    Buf *eight[] = {&o->ts_d, &o->ts_ns, &o->dur_d, &o->dur_ns, &o->el_at, &o->corr, &o->ext, &o->dev, &o->seq,
                    &o->fwd, &o->fid};
    for (size_t i = 0; i < sizeof one / sizeof *one; i++)
        if (buf_reserve(one[i], n)) return -1;
    for (size_t i = 0; i < sizeof four / sizeof *four; i++)
        if (buf_reserve(four[i], 4 * n)) return -1;
    for (size_t i = 0; i < sizeof eight / sizeof *eight; i++)
        if (buf_reserve(eight[i], 8 * n)) return -1;
    return 0;
}

static void out_free(Out *o) {
    Buf *b = (Buf *)o;
    for (size_t i = 0; i < sizeof(Out) / sizeof(Buf); i++) pool_give(b[i].data, b[i].cap);
}

enum { K_PH, K_NAME, K_CAT, K_PID, K_TID, K_TS, K_DUR, K_ID, K_ID2, K_S, K_BP, K_ARGS, K_OTHER };

static int key_kind(const unsigned char *k, Py_ssize_t n) {
#define IS(s) (n == (Py_ssize_t)sizeof(s) - 1 && !memcmp(k, s, n))
    if (IS("ph")) return K_PH;
    if (IS("name")) return K_NAME;
    if (IS("cat")) return K_CAT;
    if (IS("pid")) return K_PID;
    if (IS("tid")) return K_TID;
    if (IS("ts")) return K_TS;
    if (IS("dur")) return K_DUR;
    if (IS("id")) return K_ID;
    if (IS("id2")) return K_ID2;
    if (IS("s")) return K_S;
    if (IS("bp")) return K_BP;
    if (IS("args")) return K_ARGS;
    return K_OTHER;
#undef IS
}

/* an int64 JSON integer token (no fraction, no exponent, within int64) */
static int int64_token(const Num *n) {
    if (n->has_frac || n->has_exp || n->int_digits > 19) return 0;
    if (n->neg ? n->ip > 9223372036854775808ULL : n->ip > 9223372036854775807ULL) return 0;
    return 1;
}

/* a time field: double and exact ns */
static int put_time(Out *o, int which, const Num *n, const unsigned char *s, const unsigned char *e) {
    double d;
    if (!which && n->int_digits <= 19 && n->ip > (1ULL << 43) + 1)
        /* a ts beyond 2**43 µs: the chunk is read from the exact ns, and its double only decides that (it is
         * > 2**43 either way): no correctly rounded conversion is needed (epoch timestamps, 19 digits) */
        d = n->neg ? -(double)n->ip : (double)n->ip;
    else
        d = num_double(n, s, e);
    uint8_t st;
    int64_t ns = num_ns(n, &st);
    Buf *bd = which ? &o->dur_d : &o->ts_d, *bn = which ? &o->dur_ns : &o->ts_ns, *bs = which ? &o->dur_st : &o->ts_st;
    if (buf_put(bd, &d, 8) || buf_put(bn, &ns, 8) || buf_put(bs, &st, 1)) return -1;
    return 0;
}

/* the args read here: int64 ones (correlation, External id, device, Sequence number, Fwd thread id, and a kernel's
 * or copy's registers per thread, shared memory, bytes), a kernel's float ones (blocks per SM, warps per SM,
 * est. achieved occupancy %) and launch dims (grid, block: three int64), record_shapes' texts (Input Dims, type) */
enum { A_CORR, A_EXT, A_DEV, A_SEQ, A_FWD, A_REGS, A_SHARED, A_BYTES, A_BPS, A_WPS, A_OCC, A_GRID, A_BLOCK, A_DIMS,
       A_TYPES, A_OTHER };
#define N_INT_ARGS 8
#define N_FLOAT_ARGS 3

typedef struct {
    int64_t ints[N_INT_ARGS];      /* -1 when absent (what Args defaults to) */
    double floats[N_FLOAT_ARGS];   /* -1.0 when absent */
    int64_t dims[2][3];            /* grid, block; 0 when absent */
    uint8_t has_grid;              /* the grid was three integers (a kernel launch) */
    int32_t ids[2];                /* Input Dims / Input type text ids, -1 when absent */
} ArgVals;

static const ArgVals NO_ARG_VALS = {{-1, -1, -1, -1, -1, -1, -1, -1}, {-1.0, -1.0, -1.0}, {{0, 0, 0}, {0, 0, 0}}, 0,
                                    {-1, -1}};

/* a launch grid or block at c->p: exactly three int64 integers; 0 done, 1 anything else (msgspec reads it) */
static int scan_dims3(Cur *c, int64_t *out) {
    if (c->p >= c->end || *c->p != '[') return 1;
    c->p++;
    for (int i = 0; i < 3; i++) {
        Num num;
        ws(c);
        if (c->p >= c->end || !(*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) return 1;
        if (scan_number(c, &num) || !int64_token(&num)) return 1;
        out[i] = num.neg ? (int64_t)(0 - num.ip) : (int64_t)num.ip;
        ws(c);
        if (c->p >= c->end || *c->p != (i < 2 ? ',' : ']')) return 1;
        c->p++;
    }
    return 0;
}

/* Input Dims (record_shapes) at c->p, a list of int lists at any depth, into its text as Python prints the list
 * (str(list): "[[512, 256], []]"): 0 done, 1 anything else (floats, strings, -0, ints past 18 digits, ...: the
 * caller rewinds and lets msgspec decode it), -1 malformed JSON */
static int canon_dims(Cur *c, Buf *out, int depth) {
    if (depth > MAX_DEPTH) return 1;
    if (c->p >= c->end || *c->p != '[') return 1;
    c->p++;
    if (buf_put(out, "[", 1)) return -2;
    ws(c);
    if (c->p < c->end && *c->p == ']') { c->p++; return buf_put(out, "]", 1) ? -2 : 0; }
    for (;;) {
        if (c->p >= c->end) return -1;
        if (*c->p == '[') {
            int rc = canon_dims(c, out, depth + 1);
            if (rc) return rc;
        } else if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
            const unsigned char *s = c->p;
            Num num;
            if (scan_number(c, &num)) return -1;
            if (num.has_frac || num.has_exp || num.int_digits > 18 || (num.neg && num.ip == 0)) return 1;
            if (buf_put(out, s, c->p - s)) return -2;
        } else {
            return 1;
        }
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; ws(c); if (buf_put(out, ", ", 2)) return -2; continue; }
        if (*c->p == ']') { c->p++; return buf_put(out, "]", 1) ? -2 : 0; }
        return -1;
    }
}

/* Input type at c->p, a list of strings, into their text joined by ", " (as ops.types_text joins them): 0 done,
 * 1 anything else (a non-string, an escape), -1 malformed */
static int canon_types(Cur *c, Buf *out) {
    if (c->p >= c->end || *c->p != '[') return 1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == ']') { c->p++; return 0; }
    for (;;) {
        int esc;
        if (c->p >= c->end) return -1;
        if (*c->p != '"') return 1;
        const unsigned char *s = c->p;
        if (scan_string(c, &esc)) return -1;
        if (esc) return 1;
        if (buf_put(out, s + 1, c->p - s - 2)) return -2;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; ws(c); if (buf_put(out, ", ", 2)) return -2; continue; }
        if (*c->p == ']') { c->p++; return 0; }
        return -1;
    }
}

/* an args object at c->p: reads the int64 and float args of ArgVals when they are plain numbers, grid and block
 * when they are three int64 integers, and Input Dims / Input type as their texts (ids in ``shapes`` / ``types``);
 * *need is set when anything else the Python side reads is there (or one of these is of another form, or given
 * twice) */
static int scan_args(Cur *c, int depth, int *need, ArgVals *v, Out *o, Interner *shapes, Interner *types) {
    c->p++;
    ws(c);
    unsigned seen = 0;
    if (c->p < c->end && *c->p == '}') { c->p++; return 0; }
    for (;;) {
        int esc;
        if (c->p >= c->end || *c->p != '"') return -1;
        const unsigned char *ks = c->p + 1;
        if (scan_string(c, &esc)) return -1;
        Py_ssize_t kn = c->p - 1 - ks;
        int kind = A_OTHER;
        if (esc) *need = 1;
        else if (kn == 11 && !memcmp(ks, "correlation", 11)) kind = A_CORR;
        else if (kn == 11 && !memcmp(ks, "External id", 11)) kind = A_EXT;
        else if (kn == 6 && !memcmp(ks, "device", 6)) kind = A_DEV;
        else if (kn == 15 && !memcmp(ks, "Sequence number", 15)) kind = A_SEQ;
        else if (kn == 13 && !memcmp(ks, "Fwd thread id", 13)) kind = A_FWD;
        else if (kn == 10 && !memcmp(ks, "Input Dims", 10)) kind = A_DIMS;
        else if (kn == 10 && !memcmp(ks, "Input type", 10)) kind = A_TYPES;
        else if (kn == 4 && !memcmp(ks, "grid", 4)) kind = A_GRID;
        else if (kn == 5 && !memcmp(ks, "block", 5)) kind = A_BLOCK;
        else if (kn == 20 && !memcmp(ks, "registers per thread", 20)) kind = A_REGS;
        else if (kn == 13 && !memcmp(ks, "shared memory", 13)) kind = A_SHARED;
        else if (kn == 5 && !memcmp(ks, "bytes", 5)) kind = A_BYTES;
        else if (kn == 13 && !memcmp(ks, "blocks per SM", 13)) kind = A_BPS;
        else if (kn == 12 && !memcmp(ks, "warps per SM", 12)) kind = A_WPS;
        else if (kn == 25 && !memcmp(ks, "est. achieved occupancy %", 25)) kind = A_OCC;
        else if (is_wanted(ks, kn)) *need = 1;
        ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        ws(c);
        if (kind != A_OTHER) { /* given twice: msgspec decides which one counts */
            if (seen & (1u << kind)) *need = 1;
            seen |= 1u << kind;
        }
        if (kind == A_DIMS || kind == A_TYPES) {
            const unsigned char *vs = c->p;
            o->scratch.len = 0;
            int rc = kind == A_DIMS ? canon_dims(c, &o->scratch, depth + 1) : canon_types(c, &o->scratch);
            if (rc == -2 || rc == -1) return rc;
            if (rc == 1) { /* not a plain list: msgspec decodes it */
                *need = 1;
                c->p = vs;
                if (skip_value(c, depth + 1)) return -1;
            } else {
                int32_t id = intern2(kind == A_DIMS ? shapes : types, o->scratch.data ? o->scratch.data : "",
                                     o->scratch.len, NULL, 0);
                if (id < 0) return -2;
                v->ids[kind - A_DIMS] = id;
            }
        } else if (kind == A_GRID || kind == A_BLOCK) {
            const unsigned char *vs = c->p;
            if (scan_dims3(c, v->dims[kind - A_GRID])) { /* text, another length, floats: msgspec decodes it */
                *need = 1;
                c->p = vs;
                if (skip_value(c, depth + 1)) return -1;
            } else if (kind == A_GRID) {
                v->has_grid = 1;
            }
        } else if (kind != A_OTHER) { /* a number: an int64 one, or (blocks/warps per SM, occupancy) a float */
            const unsigned char *vs = c->p;
            Num num;
            if (vs < c->end && (*vs == '-' || (*vs >= '0' && *vs <= '9'))) {
                if (scan_number(c, &num)) return -1;
                if (kind >= A_BPS) {
                    if (num.has_exp) *need = 1; /* left to msgspec's float parsing */
                    else v->floats[kind - A_BPS] = num_double(&num, vs, c->p);
                } else if (int64_token(&num)) {
                    v->ints[kind] = num.neg ? (int64_t)(0 - num.ip) : (int64_t)num.ip;
                } else {
                    *need = 1;
                }
            } else {
                *need = 1;
                if (skip_value(c, depth + 1)) return -1;
            }
        } else if (skip_value(c, depth + 1)) {
            return -1;
        }
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; ws(c); continue; }
        if (*c->p == '}') { c->p++; return 0; }
        return -1;
    }
}

/* whether an event has any kernel or copy arg (a value other than the defaults): it gets a kernel row */
static int has_kernel_args(const ArgVals *v) {
    if (v->has_grid) return 1;
    for (int i = A_REGS; i <= A_BYTES; i++)
        if (v->ints[i] != -1) return 1;
    for (int i = 0; i < N_FLOAT_ARGS; i++)
        if (v->floats[i] != -1.0) return 1;
    for (int i = 0; i < 6; i++)
        if (v->dims[i / 3][i % 3] != 0) return 1;
    return 0;
}

/* one element (an object) at c->p (the chunk's event number ev); 0 ok, -1 refuse */
static int scan_event(Cur *c, Out *o, Interner *names, Interner *cats, Interner *srcs,
                      Interner *shapes, Interner *types, int32_t ev) {
    const unsigned char *el_start = c->p;
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    ws(c);
    unsigned seen = 0;
    uint8_t ph = 0;
    const unsigned char *name_s = (const unsigned char *)"\"\"", *cat_s = name_s;
    Py_ssize_t name_n = 2, cat_n = 2;
    const unsigned char *pid_s = (const unsigned char *)"0", *tid_s = pid_s;
    Py_ssize_t pid_n = 1, tid_n = 1;
    int need = 0;
    ArgVals av = NO_ARG_VALS;
    int have_ts = 0, have_dur = 0;
    int64_t fid = 0;
    uint8_t fid_kind = ID_NONE, bp = BP_OTHER;
    if (c->p < c->end && *c->p == '}') { c->p++; goto done; }
    for (;;) {
        int esc;
        if (c->p >= c->end || *c->p != '"') return -1;
        const unsigned char *ks = c->p + 1;
        if (scan_string(c, &esc)) return -1;
        Py_ssize_t kn = c->p - 1 - ks;
        if (esc) return -1; /* an escaped key may spell a known one: leave it to the reference */
        int kind = key_kind(ks, kn);
        ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        ws(c);
        if (c->p >= c->end) return -1;
        if (kind != K_OTHER) {
            if (seen & (1u << kind)) return -1; /* duplicate key: leave it to the reference */
            seen |= 1u << kind;
        }
        const unsigned char *vs = c->p;
        Num num;
        switch (kind) {
        case K_PH:
            if (*vs != '"' || scan_string(c, &esc) || esc) return -1;
            if (c->p - vs == 3) ph = vs[1];
            else if (c->p - vs != 2) return -1; /* phases of more than one character */
            break;
        case K_NAME:
        case K_CAT:
        case K_S:
        case K_BP:
            if (*vs != '"' || scan_string(c, &esc)) return -1;
            if (kind == K_NAME) { name_s = vs; name_n = c->p - vs; }
            if (kind == K_CAT) { cat_s = vs; cat_n = c->p - vs; }
            if (kind == K_BP) bp = esc ? BP_ESCAPED : (c->p - vs == 3 && vs[1] == 'e') ? BP_E : BP_OTHER;
            break;
        case K_PID:
        case K_TID:
            if (*vs == '"') {
                if (scan_string(c, &esc)) return -1;
            } else {
                if (scan_number(c, &num) || !int64_token(&num)) return -1;
            }
            if (kind == K_PID) { pid_s = vs; pid_n = c->p - vs; } else { tid_s = vs; tid_n = c->p - vs; }
            break;
        case K_TS:
        case K_DUR:
            if (*vs == '"' || *vs == '{' || *vs == '[' || *vs == 't' || *vs == 'f' || *vs == 'n') return -1;
            if (scan_number(c, &num) || num.has_exp) return -1;
            if (put_time(o, kind == K_DUR, &num, vs, c->p)) return -2;
            if (kind == K_TS) have_ts = 1; else have_dur = 1;
            break;
        case K_ID:
            if (*vs == '"') { if (scan_string(c, &esc)) return -1; fid_kind = ID_TEXT; }
            else if (*vs == 'n') { if (skip_value(c, 1)) return -1; }
            else if (scan_number(c, &num) || !int64_token(&num)) return -1;
            else { fid = num.neg ? (int64_t)(0 - num.ip) : (int64_t)num.ip; fid_kind = ID_INT; }
            break;
        case K_ARGS:
            if (*vs == 'n') { if (skip_value(c, 1)) return -1; break; }
            if (*vs != '{') return -1;
            {
                int rc = scan_args(c, 1, &need, &av, o, shapes, types);
                if (rc) return rc == -2 ? -2 : -1;
            }
            if (need && ((o->n_args++ && buf_put(&o->args_json, ",", 1)) ||
                         buf_put(&o->args_json, vs, (Py_ssize_t)(c->p - vs))))
                return -2;
            break;
        default:
            if (skip_value(c, 1)) return -1;
        }
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; ws(c); continue; }
        if (*c->p == '}') { c->p++; break; }
        return -1;
    }
done:;
    double nan = NAN, zero = 0.0;
    int64_t z = 0;
    uint8_t missing = T_MISSING, ok = T_OK;
    if (!have_ts && (buf_put(&o->ts_d, &nan, 8) || buf_put(&o->ts_ns, &z, 8) || buf_put(&o->ts_st, &missing, 1)))
        return -2;
    if (!have_dur && (buf_put(&o->dur_d, &zero, 8) || buf_put(&o->dur_ns, &z, 8) || buf_put(&o->dur_st, &ok, 1)))
        return -2;
    int32_t nid = intern2(names, (const char *)name_s, name_n, NULL, 0);
    int32_t cid = intern2(cats, (const char *)cat_s, cat_n, NULL, 0);
    int32_t sid = intern2(srcs, (const char *)pid_s, pid_n, (const char *)tid_s, tid_n);
    if (nid < 0 || cid < 0 || sid < 0) return -2;
    /* The element's bytes are kept (in o->rare; el_at is where they start there, -1 where they are not kept) for
     * the events the Python side decodes one by one: every phase other than slices, instants, B/E and flows
     * (metadata, counters, async, ...), flows whose id is a string or whose bp is escaped (the columns hold the
     * others' ids and bp), and any event whose ts is missing or out of range (quoted in warnings). */
    int32_t el_len = (int32_t)(c->p - el_start);
    int64_t el_at = -1;
    uint8_t ts_state = o->ts_st.data[o->ts_st.len - 1];
    int flow = ph == 's' || ph == 't' || ph == 'f';
    int columns_suffice = ph == 'X' || ph == 'i' || ph == 'I' || ph == 'B' || ph == 'E' ||
                          (flow && fid_kind != ID_TEXT && bp != BP_ESCAPED);
    if (!columns_suffice || ts_state != T_OK) {
        el_at = (int64_t)o->rare.len;
        if (buf_put(&o->rare, el_start, el_len)) return -2;
    }
    if (buf_put(&o->ph, &ph, 1) || buf_put(&o->name, &nid, 4) || buf_put(&o->cat, &cid, 4) ||
        buf_put(&o->src, &sid, 4) || buf_put(&o->el_at, &el_at, 8) || buf_put(&o->el_len, &el_len, 4))
        return -2;
    uint8_t nd = (uint8_t)need;
    if (buf_put(&o->corr, &av.ints[A_CORR], 8) || buf_put(&o->ext, &av.ints[A_EXT], 8) ||
        buf_put(&o->dev, &av.ints[A_DEV], 8) || buf_put(&o->need, &nd, 1) || buf_put(&o->seq, &av.ints[A_SEQ], 8) ||
        buf_put(&o->fwd, &av.ints[A_FWD], 8) || buf_put(&o->dims, &av.ids[0], 4) || buf_put(&o->types, &av.ids[1], 4) ||
        buf_put(&o->fid, &fid, 8) || buf_put(&o->fid_kind, &fid_kind, 1) || buf_put(&o->bp, &bp, 1))
        return -2;
    if (has_kernel_args(&av) &&
        (buf_put(&o->k_row, &ev, 4) || buf_put(&o->k_ints, &av.ints[A_REGS], 3 * 8) ||
         buf_put(&o->k_floats, av.floats, 3 * 8) || buf_put(&o->k_dims, av.dims, 6 * 8) ||
         buf_put(&o->has_grid, &av.has_grid, 1)))
        return -2;
    return 0;
}

static PyObject *keys_list(Interner *t) {
    PyObject *list = PyList_New(t->n);
    if (!list) return NULL;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_ssize_t n;
        const char *k = key_at(t, (int32_t)i, &n);
        PyObject *b = PyBytes_FromStringAndSize(k, n);
        if (!b) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, b);
    }
    return list;
}

/* A column handed to Python without a copy: it owns the Buf's memory and exposes it (read-only) through the buffer
 * protocol, for np.frombuffer and memoryview. Copying every column into a bytes object would touch as much fresh
 * memory again as the scan wrote, and a first touch of memory is what a scan costs most where page faults are
 * slow (virtual machines). */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len, cap;
} Block;

static int block_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Block *b = (Block *)self;
    return PyBuffer_FillInfo(view, self, b->data ? b->data : (char *)"", b->len, 1, flags);
}

static void block_dealloc(PyObject *self) {
    pool_give(((Block *)self)->data, ((Block *)self)->cap);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t block_length(PyObject *self) { return ((Block *)self)->len; }

static PyBufferProcs block_as_buffer = {block_getbuffer, NULL};
static PySequenceMethods block_as_sequence = {block_length};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_fastscan.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = block_dealloc,
    .tp_as_sequence = &block_as_sequence,
    .tp_as_buffer = &block_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A column of the scanner's output (read-only bytes, through the buffer protocol).",
};

/* the Buf's memory as a Block (the Buf gives it up; no copy) */
static PyObject *as_block(Buf *b) {
    Block *blk = PyObject_New(Block, &BlockType);
    if (!blk) return NULL;
    blk->data = b->data;
    blk->len = b->len;
    blk->cap = b->cap;
    b->data = NULL;
    b->len = b->cap = 0;
    return (PyObject *)blk;
}

/* res[key] = value, taking over the new reference to value (NULL: an error already set); -1 on error */
static int put_new(PyObject *res, const char *key, PyObject *value) {
    if (!value) return -1;
    int rc = PyDict_SetItemString(res, key, value);
    Py_DECREF(value);
    return rc < 0 ? -1 : 0;
}

/* whether the element starting at p closes before end (strings and nesting followed, nothing validated): an
 * element cut by the end of the window does not */
static int element_closes(const unsigned char *p, const unsigned char *end) {
    Py_ssize_t depth = 0;
    while (p < end) {
        unsigned char ch = *p++;
        if (ch == '"') {
            while (p < end && *p != '"') p += *p == '\\' ? 2 : 1;
            if (p >= end) return 0;
            p++;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if ((ch == '}' || ch == ']') && --depth <= 0) {
            return 1;
        }
    }
    return 0;
}

/* the interner back to its first n keys (the keys added since were added last, so no other key's probe passes
 * through their slots) */
static void interner_truncate(Interner *t, Py_ssize_t n) {
    if (t->n == n) return;
    for (Py_ssize_t j = 0; j < t->cap; j++)
        if (t->slots[j] > n) t->slots[j] = 0;
    t->n = n;
    t->keys.len = (Py_ssize_t)((int64_t *)t->offs.data)[n];
    t->offs.len = (n + 1) * (Py_ssize_t)sizeof(int64_t);
}

/* One scan: set up with the GIL (job_setup), run without it (job_run: it touches no Python object), and turned
 * into the dict of columns, or None, with the GIL again (job_result, which frees what the job holds). */
typedef struct {
    Py_buffer view;
    int has_view, prefix, rc;
    Out o;
    Interner names, cats, srcs, shapes, types;
    Py_ssize_t n, done_at;
    PyThread_type_lock done; /* released when job_run ends, for a job run on a thread of its own */
} Job;

static int job_setup(Job *j, PyObject *arg, int prefix) {
    memset(j, 0, sizeof *j);
    j->prefix = prefix;
    if (PyObject_GetBuffer(arg, &j->view, PyBUF_SIMPLE)) return -1;
    j->has_view = 1;
    if (interner_init(&j->names) || interner_init(&j->cats) || interner_init(&j->srcs) ||
        interner_init(&j->shapes) || interner_init(&j->types))
        j->rc = -2;
    if (!j->rc && buf_put(&j->o.args_json, "[", 1)) j->rc = -2;
    return 0;
}

static void job_run(Job *j) {
    const unsigned char *base = j->view.buf;
    Cur c = {base, base + j->view.len};
    Out *o = &j->o;
    int rc = j->rc, prefix = j->prefix;
    Py_ssize_t n = 0, done_at = 0;
    if (!rc && out_reserve(o, j->view.len)) rc = -2;
    if (!rc) {
        ws(&c);
        if (c.p >= c.end || *c.p != '[') rc = -1;
        else {
            c.p++;
            ws(&c);
            if (c.p < c.end && *c.p == ']') { if (!prefix) c.p++; done_at = c.p - base; }
            else {
                for (;;) {
                    const unsigned char *el = c.p;
                    Py_ssize_t json_len = o->args_json.len, n_args = o->n_args, n_shapes = j->shapes.n,
                               n_types = j->types.n;
                    rc = scan_event(&c, o, &j->names, &j->cats, &j->srcs, &j->shapes, &j->types, (int32_t)n);
                    if (rc == -1 && prefix && n > 0 && !element_closes(el, c.end)) {
                        /* the window ends inside this element: keep the ones before it, drop what it wrote */
                        o->ts_d.len = o->dur_d.len = o->ts_ns.len = o->dur_ns.len = n * 8;
                        o->ts_st.len = o->dur_st.len = n;
                        o->args_json.len = json_len;
                        o->n_args = n_args;
                        interner_truncate(&j->shapes, n_shapes);
                        interner_truncate(&j->types, n_types);
                        rc = 0;
                        break;
                    }
                    if (rc) break;
                    n++;
                    done_at = c.p - base;
                    ws(&c);
                    if (c.p >= c.end) { if (!prefix) rc = -1; break; }
                    if (*c.p == ',') { c.p++; ws(&c); continue; }
                    if (*c.p == ']') { if (!prefix) c.p++; break; }
                    rc = -1;
                    break;
                }
            }
            ws(&c);
            if (!rc && !prefix && c.p != c.end) rc = -1;
        }
    }
    if (!rc && buf_put(&o->args_json, "]", 1)) rc = -2;
    if (!rc && n >= 64) { /* (a text of a few events says little about the next one) */
        PyThread_acquire_lock(pool_lock, WAIT_LOCK);
        seen_event_bytes = done_at / n;
        PyThread_release_lock(pool_lock);
    }
    /* CUPTI range-profiler ranges carry their counters in args not read here: the Python path reads such chunks */
    for (Py_ssize_t i = 0; !rc && i < j->cats.n; i++) {
        Py_ssize_t kn;
        const char *k = key_at(&j->cats, (int32_t)i, &kn);
        if (kn == (Py_ssize_t)sizeof(PROFILER_RANGE_CAT) - 1 && !memcmp(k, PROFILER_RANGE_CAT, kn)) rc = -1;
    }
    j->rc = rc;
    j->n = n;
    j->done_at = done_at;
}

static PyObject *job_result(Job *j) {
    Out *o = &j->o;
    PyObject *res = NULL;
    if (j->has_view) PyBuffer_Release(&j->view);
    if (j->rc == -2) {
        PyErr_NoMemory();
    } else if (j->rc == -1) {
        res = Py_None;
        Py_INCREF(res);
    } else {
        res = Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:n,s:n,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}",
                            "args_json", as_block(&o->args_json), "corr", as_block(&o->corr), "ext",
                            as_block(&o->ext), "dev", as_block(&o->dev), "need", as_block(&o->need), "n", j->n,
                            "end", j->done_at, "ph", as_block(&o->ph), "name", as_block(&o->name), "cat",
                            as_block(&o->cat), "src", as_block(&o->src), "ts_d", as_block(&o->ts_d), "ts_ns",
                            as_block(&o->ts_ns), "ts_st", as_block(&o->ts_st), "dur_d", as_block(&o->dur_d),
                            "dur_ns", as_block(&o->dur_ns), "el_at", as_block(&o->el_at), "el_len",
                            as_block(&o->el_len), "rare", as_block(&o->rare), "names", keys_list(&j->names));
        if (res && (put_new(res, "cats", keys_list(&j->cats)) || put_new(res, "srcs", keys_list(&j->srcs)) ||
                    put_new(res, "seq", as_block(&o->seq)) || put_new(res, "fwd", as_block(&o->fwd)) ||
                    put_new(res, "dims", as_block(&o->dims)) || put_new(res, "types", as_block(&o->types)) ||
                    put_new(res, "shapes", keys_list(&j->shapes)) ||
                    put_new(res, "typestrs", keys_list(&j->types)) || put_new(res, "k_row", as_block(&o->k_row)) ||
                    put_new(res, "k_ints", as_block(&o->k_ints)) || put_new(res, "k_floats", as_block(&o->k_floats)) ||
                    put_new(res, "k_dims", as_block(&o->k_dims)) ||
                    put_new(res, "has_grid", as_block(&o->has_grid)) || put_new(res, "fid", as_block(&o->fid)) ||
                    put_new(res, "fid_kind", as_block(&o->fid_kind)) || put_new(res, "bp", as_block(&o->bp))))
            Py_CLEAR(res);
    }
    out_free(o);
    interner_free(&j->names);
    interner_free(&j->cats);
    interner_free(&j->srcs);
    interner_free(&j->shapes);
    interner_free(&j->types);
    return res;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *arg;
    int prefix = 0;
    if (!PyArg_ParseTuple(args, "O|p:scan", &arg, &prefix)) return NULL;
    Job j;
    if (job_setup(&j, arg, prefix)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    job_run(&j);
    Py_END_ALLOW_THREADS
    return job_result(&j);
}

static void job_thread(void *arg) {
    Job *j = arg;
    job_run(j);
    PyThread_release_lock(j->done);
}

/* scan_many(texts, prefix=False) -> [scan(text, prefix) for text in texts], the texts scanned at once: each after
 * the first on a native thread of its own, the first on the caller's, all without the GIL. The Python side
 * scanned the parts of a window on Python threads, and every one of them, and the caller between them, had to
 * take the GIL again (to start, to call the scan, to join): while the loading thread ran Python code that took up
 * to the GIL's switch interval each time (a scan started 3-4 ms late in every window). */
static PyObject *scan_many(PyObject *self, PyObject *args) {
    PyObject *seq;
    int prefix = 0;
    if (!PyArg_ParseTuple(args, "O|p:scan_many", &seq, &prefix)) return NULL;
    PyObject *items = PySequence_Fast(seq, "scan_many() takes a sequence of texts");
    if (!items) return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(items);
    Job *jobs = k ? PyMem_Calloc((size_t)k, sizeof(Job)) : NULL;
    if (k && !jobs) {
        Py_DECREF(items);
        return PyErr_NoMemory();
    }
    Py_ssize_t ready = 0;
    for (; ready < k; ready++)
        if (job_setup(&jobs[ready], PySequence_Fast_GET_ITEM(items, ready), prefix)) break;
    PyObject *out = NULL;
    if (ready == k) {
        Py_ssize_t started = 1;
        for (; started < k; started++) {
            Job *j = &jobs[started];
            j->done = PyThread_allocate_lock();
            if (!j->done) break;
            PyThread_acquire_lock(j->done, WAIT_LOCK);
            if (PyThread_start_new_thread(job_thread, j) == PYTHREAD_INVALID_THREAD_ID) {
                PyThread_release_lock(j->done);
                PyThread_free_lock(j->done);
                j->done = NULL;
                break;
            }
        }
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = started; i < k; i++) job_run(&jobs[i]); /* no thread for these: run them here */
        if (k) job_run(&jobs[0]);
        for (Py_ssize_t i = 1; i < started; i++) PyThread_acquire_lock(jobs[i].done, WAIT_LOCK);
        Py_END_ALLOW_THREADS
        for (Py_ssize_t i = 1; i < started; i++) PyThread_free_lock(jobs[i].done);
        out = PyList_New(k);
    } else {
        for (Py_ssize_t i = 0; i < ready; i++) jobs[i].rc = -1; /* set up, never run: freed below, no result */
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        if (i >= ready) continue; /* never set up (from the argument without a buffer on): nothing to free */
        PyObject *r = job_result(&jobs[i]);
        if (!r || !out) {
            Py_XDECREF(r);
            Py_CLEAR(out);
            continue;
        }
        PyList_SET_ITEM(out, i, r);
    }
    PyMem_Free(jobs);
    Py_DECREF(items);
    return out;
}

static PyObject *configure(PyObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "configure() takes a list of bytes");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_WANTED) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "too many keys"); return NULL; }
    for (int i = 0; i < n_wanted; i++) free(wanted[i]);
    n_wanted = 0;
    memset(want_mask, 0, sizeof want_mask);
    for (Py_ssize_t i = 0; i < n; i++) {
        char *data;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, i), &data, &len) || len == 0) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "empty key");
            return NULL;
        }
        wanted[n_wanted] = malloc(len);
        if (!wanted[n_wanted]) { Py_DECREF(seq); return PyErr_NoMemory(); }
        memcpy(wanted[n_wanted], data, len);
        want_mask[(unsigned char)data[0]] |= 1ULL << (len & 63);
        wanted_len[n_wanted++] = len;
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyObject *trim(PyObject *self, PyObject *unused) {
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    for (int i = 0; i < pool_n; i++) free(pool_ptr[i]);
    pool_n = 0;
    pool_bytes = 0;
    PyThread_release_lock(pool_lock);
    Py_RETURN_NONE;
}

static PyObject *pooled(PyObject *self, PyObject *unused) {
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    Py_ssize_t n = pool_bytes;
    PyThread_release_lock(pool_lock);
    return PyLong_FromSsize_t(n);
}

/* is_object(text) -> whether text is one JSON object and nothing else (white space around it), by the scanner's
 * strict reading (what msgspec decodes: no NaN, no control characters or lone surrogates in strings, valid
 * UTF-8, at most MAX_DEPTH deep). The streamer tells with it where a file's keys before its events end, without
 * decoding them on its thread (parsers/chrome/stream.py). */
static PyObject *is_object(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Cur c = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len};
    ws(&c);
    int ok = c.p < c.end && *c.p == '{' && !skip_value(&c, 0);
    if (ok) {
        ws(&c);
        ok = c.p == c.end;
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

/* map_ids(local, itemsize, keys, table, new=None) -> bytes of len(keys) int64: the loading thread's mapping of a
 * part's local ids to the trace's, in one pass over ``local`` (a contiguous buffer of int32 or int64 ids, each in
 * [0, len(keys))). Each id, where it first appears in ``local``, is looked up as ``table.get(keys[id])``; a key
 * not there gets ``new(key)`` (or ``len(table)`` when ``new`` is None) and is stored in ``table``, so new keys get
 * their ids in the order they first appear, as the Python loop over ``first_seen`` gave them. Ids that do not
 * appear map to -1. Replaces a ufunc ``minimum.at``, an argsort and a Python loop per column of every part. */
static PyObject *map_ids(PyObject *self, PyObject *args) {
    PyObject *local, *keys, *table, *make = Py_None;
    Py_ssize_t itemsize;
    if (!PyArg_ParseTuple(args, "OnO!O!|O", &local, &itemsize, &PyList_Type, &keys, &PyDict_Type, &table, &make))
        return NULL;
    if (itemsize != 4 && itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "map_ids: ids must be int32 or int64");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(local, &view, PyBUF_C_CONTIGUOUS)) return NULL;
    Py_ssize_t k = PyList_GET_SIZE(keys), n = view.len / itemsize;
    PyObject *out = PyBytes_FromStringAndSize(NULL, k * (Py_ssize_t)sizeof(int64_t));
    if (!out) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int64_t *m = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t u = 0; u < k; u++) m[u] = -1;
    const int32_t *l4 = (const int32_t *)view.buf;
    const int64_t *l8 = (const int64_t *)view.buf;
    Py_ssize_t left = k; /* ids not seen yet: the pass stops once every key is mapped */
    for (Py_ssize_t i = 0; i < n && left; i++) {
        int64_t u = itemsize == 4 ? (int64_t)l4[i] : l8[i];
        if (u < 0 || u >= k) {
            PyErr_SetString(PyExc_ValueError, "map_ids: a local id outside [0, len(keys))");
            goto fail;
        }
        if (m[u] != -1) continue;
        PyObject *key = PyList_GET_ITEM(keys, u);
        PyObject *g = PyDict_GetItemWithError(table, key); /* borrowed */
        int64_t id;
        if (g) {
            id = PyLong_AsLongLong(g);
        } else {
            if (PyErr_Occurred()) goto fail;
            PyObject *made = make == Py_None ? PyLong_FromSsize_t(PyDict_Size(table)) : PyObject_CallOneArg(make, key);
            if (!made) goto fail;
            if (PyDict_SetItem(table, key, made)) {
                Py_DECREF(made);
                goto fail;
            }
            id = PyLong_AsLongLong(made);
            Py_DECREF(made);
        }
        if (id == -1 && PyErr_Occurred()) goto fail;
        if (id < 0) {
            PyErr_SetString(PyExc_ValueError, "map_ids: a negative id in the table");
            goto fail;
        }
        m[u] = id;
        left--;
    }
    PyBuffer_Release(&view);
    return out;
fail:
    PyBuffer_Release(&view);
    Py_DECREF(out);
    return NULL;
}

/* classes(src, cat, phc, device, name, mtia, table) -> bytes of n int32: the class of each of a part's events (the
 * Chrome loader's classify.event_classes): its row (src, cat, phc, device, name_key) as a tuple of ints, looked up
 * in ``table`` (a dict) and added with the id ``len(table)`` where it is not there, new rows in the order they
 * first appear. ``name_key`` is the event's name where its category is 0 (none) or ``mtia``, else -1. ``src``,
 * ``cat``, ``device`` and ``name`` are contiguous int32 buffers, ``phc`` uint8, all of n items. A part holds a few
 * distinct rows: each is found in a small hash table of its own, and the dict is asked once per distinct row. */
typedef struct {
    int32_t k[5];
    int32_t id; /* the class; -1: an empty slot */
} ClassSlot;

static uint64_t class_hash(const int32_t *k) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int j = 0; j < 5; j++) {
        h ^= (uint32_t)k[j];
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    return h;
}

static PyObject *classes(PyObject *self, PyObject *args) {
    PyObject *objs[5], *table;
    long long mtia;
    if (!PyArg_ParseTuple(args, "OOOOOLO!", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &mtia, &PyDict_Type,
                          &table))
        return NULL;
    Py_buffer v[5];
    int got = 0;
    PyObject *out = NULL;
    ClassSlot *slots = NULL;
    static const Py_ssize_t itemsize[5] = {4, 4, 1, 4, 4};
    for (; got < 5; got++)
        if (PyObject_GetBuffer(objs[got], &v[got], PyBUF_C_CONTIGUOUS)) goto done;
    Py_ssize_t n = v[0].len / 4;
    for (int j = 0; j < 5; j++)
        if (v[j].len != n * itemsize[j]) {
            PyErr_SetString(PyExc_ValueError, "classes: columns of other lengths or item sizes");
            goto done;
        }
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (!out) goto done;
    int32_t *cls = (int32_t *)PyBytes_AS_STRING(out);
    const int32_t *src = v[0].buf, *cat = v[1].buf, *dev = v[3].buf, *name = v[4].buf;
    const uint8_t *phc = v[2].buf;
    size_t cap = 64, used = 0;
    slots = malloc(cap * sizeof(ClassSlot));
    if (!slots) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t u = 0; u < cap; u++) slots[u].id = -1;
    int32_t last[5] = {0, 0, 0, 0, 0}, last_id = -1; /* runs of one row are common: no look-up for them */
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t k[5] = {src[i], cat[i], (int32_t)phc[i], dev[i], (cat[i] == 0 || cat[i] == mtia) ? name[i] : -1};
        if (last_id >= 0 && !memcmp(k, last, sizeof k)) {
            cls[i] = last_id;
            continue;
        }
        size_t at = (size_t)class_hash(k) & (cap - 1);
        while (slots[at].id >= 0 && memcmp(slots[at].k, k, sizeof k)) at = (at + 1) & (cap - 1);
        if (slots[at].id < 0) { /* first time in this part: the trace's id from the table */
            PyObject *key = Py_BuildValue("(iiiii)", k[0], k[1], k[2], k[3], k[4]);
            if (!key) goto fail;
            PyObject *g = PyDict_GetItemWithError(table, key); /* borrowed */
            long long id;
            if (g) {
                id = PyLong_AsLongLong(g);
            } else if (PyErr_Occurred()) {
                Py_DECREF(key);
                goto fail;
            } else {
                PyObject *made = PyLong_FromSsize_t(PyDict_Size(table));
                if (!made || PyDict_SetItem(table, key, made)) {
                    Py_XDECREF(made);
                    Py_DECREF(key);
                    goto fail;
                }
                id = PyLong_AsLongLong(made);
                Py_DECREF(made);
            }
            Py_DECREF(key);
            if (id < 0 || id > INT32_MAX) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "classes: an id outside int32 in the table");
                goto fail;
            }
            memcpy(slots[at].k, k, sizeof k);
            slots[at].id = (int32_t)id;
            if (2 * ++used > cap) { /* grow: rehash into twice the slots */
                size_t cap2 = 2 * cap;
                ClassSlot *s2 = malloc(cap2 * sizeof(ClassSlot));
                if (!s2) {
                    PyErr_NoMemory();
                    goto fail;
                }
                for (size_t u = 0; u < cap2; u++) s2[u].id = -1;
                for (size_t u = 0; u < cap; u++) {
                    if (slots[u].id < 0) continue;
                    size_t b = (size_t)class_hash(slots[u].k) & (cap2 - 1);
                    while (s2[b].id >= 0) b = (b + 1) & (cap2 - 1);
                    s2[b] = slots[u];
                }
                free(slots);
                slots = s2;
                cap = cap2;
                at = (size_t)class_hash(k) & (cap - 1);
                while (memcmp(slots[at].k, k, sizeof k)) at = (at + 1) & (cap - 1);
            }
        }
        memcpy(last, k, sizeof k);
        last_id = cls[i] = slots[at].id;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    free(slots);
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    return out;
}

static PyMethodDef methods[] = {
    {"map_ids", map_ids, METH_VARARGS,
     "map_ids(local, itemsize, keys, table, new=None) -> int64 bytes: local ids -> the table's, new keys in order"},
    {"classes", classes, METH_VARARGS,
     "classes(src, cat, phc, device, name, mtia, table) -> int32 bytes: each event's class, new rows in order"},
    {"is_object", is_object, METH_O, "is_object(text) -> whether text is one strict JSON object"},
    {"trim", trim, METH_NOARGS, "trim(): free the column memory kept for reuse between scans"},
    {"pooled", pooled, METH_NOARGS, "pooled() -> bytes of column memory kept for reuse between scans"},
    {"configure", configure, METH_O, "configure(keys): the args keys the Python side reads"},
    {"scan_many", scan_many, METH_VARARGS,
     "scan_many(texts, prefix=False) -> [scan(text, prefix) for text in texts], scanned at once without the GIL"},
    {"scan", scan, METH_VARARGS,
     "scan(text, prefix=False) -> dict of columns, or None when the pure-Python decoder must read it"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastscan(void) {
    init_plain();
    pool_lock = PyThread_allocate_lock();
    if (!pool_lock) return PyErr_NoMemory();
    if (PyType_Ready(&BlockType) < 0) return NULL;
    return PyModule_Create(&module);
}
