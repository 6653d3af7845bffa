/* The optional compiled row assignment of the model builder: gputop_trace/model/depths.py's assign_depths in one
 * pass per lane, without the sorts and binary searches the numpy path needs (that path stays the reference and
 * the fallback; tests/unit/test_rows_compiled.py compares the two).
 *
 * rows(start, dur, lane_offsets, out): start and dur int64 ns of every event, sorted by (lane, start, -dur);
 * lane_offsets int64 (lanes + 1); out int16, written with every event's row. Returns the largest row + 1, or -1
 * when a row would pass 32767 (out is then undefined; the caller raises). Per lane, exactly as the numpy path:
 *   - times are doubled so that a zero-length event occupies [2s, 2s + 1);
 *   - an event's candidate row is the number of earlier events of its lane still open when it starts (its
 *     nesting depth when events nest properly);
 *   - when no row then holds two overlapping events, those rows are kept; otherwise the whole lane is packed
 *     greedily (each event in the lowest row free at its start), which never drops an event.
 * The GIL is released while it runs. Times are in ns, doubled times wrap as int64 arithmetic does in numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROW 32767

/* a binary min-heap of (key, row) pairs: open events by end (key) for the candidate rows and the greedy packing
 * (ties by row, as Python's heap of (end, row) tuples), or free rows (key = row) */
typedef struct {
    int64_t *key;
    int32_t *row;
    Py_ssize_t n, cap;
} Heap;

static int heap_init(Heap *h, Py_ssize_t cap) {
    h->n = 0;
    h->cap = cap > 16 ? cap : 16;
    h->key = malloc(sizeof(int64_t) * h->cap);
    h->row = malloc(sizeof(int32_t) * h->cap);
    return h->key && h->row ? 0 : -1;
}

static void heap_free(Heap *h) {
    free(h->key);
    free(h->row);
}

static int less(const Heap *h, Py_ssize_t a, Py_ssize_t b) {
    return h->key[a] < h->key[b] || (h->key[a] == h->key[b] && h->row[a] < h->row[b]);
}

static void swap(Heap *h, Py_ssize_t a, Py_ssize_t b) {
    int64_t k = h->key[a];
    int32_t r = h->row[a];
    h->key[a] = h->key[b];
    h->row[a] = h->row[b];
    h->key[b] = k;
    h->row[b] = r;
}

static int heap_push(Heap *h, int64_t key, int32_t row) {
    if (h->n == h->cap) {
        Py_ssize_t cap = 2 * h->cap;
        int64_t *k = realloc(h->key, sizeof(int64_t) * cap);
        if (!k) return -1;
        h->key = k;
        int32_t *r = realloc(h->row, sizeof(int32_t) * cap);
        if (!r) return -1;
        h->row = r;
        h->cap = cap;
    }
    Py_ssize_t i = h->n++;
    h->key[i] = key;
    h->row[i] = row;
    while (i > 0 && less(h, i, (i - 1) / 2)) {
        swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

static void heap_pop(Heap *h) {
    h->n--;
    if (!h->n) return;
    h->key[0] = h->key[h->n];
    h->row[0] = h->row[h->n];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && less(h, l, m)) m = l;
        if (r < h->n && less(h, r, m)) m = r;
        if (m == i) break;
        swap(h, i, m);
        i = m;
    }
}

/* doubled start and end of event i (numpy's int64 arithmetic wraps; so does this, through unsigned) */
static inline int64_t start2(const int64_t *s, Py_ssize_t i) { return (int64_t)((uint64_t)s[i] * 2u); }
static inline int64_t end2(const int64_t *s, const int64_t *d, Py_ssize_t i) {
    if (d[i] > 0) return (int64_t)(((uint64_t)s[i] + (uint64_t)d[i]) * 2u);
    return (int64_t)((uint64_t)s[i] * 2u + 1u);
}

/* one lane [a, b): 0 done, -1 out of memory, -2 a row beyond MAX_ROW; *top: largest row + 1 */
static int lane_rows(const int64_t *s, const int64_t *d, Py_ssize_t a, Py_ssize_t b, int16_t *out, int32_t *top,
                     Heap *open, Heap *freerows, int64_t **last_end, Py_ssize_t *last_cap) {
    /* quick exit: nothing starts before the running maximum end of what came before it: one row */
    int64_t run = end2(s, d, a);
    Py_ssize_t i;
    for (i = a + 1; i < b; i++) {
        if (start2(s, i) < run) break;
        int64_t e = end2(s, d, i);
        if (e > run) run = e;
    }
    if (i == b) {
        memset(out + a, 0, sizeof(int16_t) * (size_t)(b - a));
        if (*top < 1) *top = 1;
        return 0;
    }
    /* candidate rows: the events still open at each start; then check that no row holds an overlap */
    open->n = 0;
    int disjoint = 1;
    int32_t rows_used = 0;
    for (i = a; i < b; i++) {
        int64_t st = start2(s, i), e = end2(s, d, i);
        while (open->n && open->key[0] <= st) heap_pop(open);
        Py_ssize_t r = open->n;
        if (r > MAX_ROW) return -2;
        if (r >= *last_cap) {
            Py_ssize_t cap = 2 * (r + 1);
            int64_t *le = realloc(*last_end, sizeof(int64_t) * cap);
            if (!le) return -1;
            *last_end = le;
            *last_cap = cap;
        }
        if (r >= rows_used) {
            (*last_end)[r] = INT64_MIN;
            rows_used = (int32_t)r + 1;
        }
        if (st < (*last_end)[r]) disjoint = 0;
        (*last_end)[r] = e;
        out[i] = (int16_t)r;
        if (heap_push(open, e, 0)) return -1;
    }
    if (disjoint) {
        if (*top < rows_used) *top = rows_used;
        return 0;
    }
    /* greedy first-free-row packing */
    open->n = 0;
    freerows->n = 0;
    int32_t next_row = 0;
    for (i = a; i < b; i++) {
        int64_t st = start2(s, i), e = end2(s, d, i);
        while (open->n && open->key[0] <= st) {
            if (heap_push(freerows, open->row[0], open->row[0])) return -1;
            heap_pop(open);
        }
        int32_t r;
        if (freerows->n) {
            r = freerows->row[0];
            heap_pop(freerows);
        } else {
            r = next_row++;
        }
        if (r > MAX_ROW) return -2;
        out[i] = (int16_t)r;
        if (heap_push(open, e, r)) return -1;
    }
    if (*top < next_row) *top = next_row;
    return 0;
}

static int get_buf(PyObject *obj, Py_buffer *view, const char *fmt, int writable, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0))) return -1;
    /* int16 is "h"; int64 is "l" or "q" (the same type under two names, by platform) */
    const char *f = view->format ? view->format : "B";
    if (f[0] == '=' || f[0] == '<' || f[0] == '@') f++;
    int kind_ok = fmt[0] == 'h' ? (f[0] == 'h' && !f[1]) : ((f[0] == 'l' || f[0] == 'q') && !f[1]);
    if (!kind_ok || view->itemsize != (Py_ssize_t)(fmt[0] == 'h' ? 2 : 8) || view->ndim != 1) {
        PyErr_Format(PyExc_TypeError, "%s must be a one-dimensional array of %s", what,
                     fmt[0] == 'h' ? "int16" : "int64");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *rows(PyObject *self, PyObject *args) {
    PyObject *o_start, *o_dur, *o_off, *o_out;
    if (!PyArg_ParseTuple(args, "OOOO", &o_start, &o_dur, &o_off, &o_out)) return NULL;
    Py_buffer vs, vd, vo, vout;
    if (get_buf(o_start, &vs, "q", 0, "start")) return NULL;
    if (get_buf(o_dur, &vd, "q", 0, "dur")) {
        PyBuffer_Release(&vs);
        return NULL;
    }
    if (get_buf(o_off, &vo, "q", 0, "lane_offsets")) {
        PyBuffer_Release(&vs);
        PyBuffer_Release(&vd);
        return NULL;
    }
    if (get_buf(o_out, &vout, "h", 1, "out")) {
        PyBuffer_Release(&vs);
        PyBuffer_Release(&vd);
        PyBuffer_Release(&vo);
        return NULL;
    }
    Py_ssize_t n = vs.len / 8, lanes = vo.len / 8 - 1;
    const int64_t *s = vs.buf, *d = vd.buf, *off = vo.buf;
    int16_t *out = vout.buf;
    int rc = 0;
    if (vd.len / 8 != n || vout.len / 2 != n || lanes < 0) {
        rc = -3;
    } else {
        for (Py_ssize_t l = 0; l < lanes; l++)
            if (off[l] < 0 || off[l] > off[l + 1] || off[l + 1] > n) rc = -3;
    }
    int32_t top = 0;
    if (!rc) {
        Heap open, freerows;
        int64_t *last_end = NULL;
        Py_ssize_t last_cap = 0;
        int ok = !heap_init(&open, 64) && !heap_init(&freerows, 64);
        Py_BEGIN_ALLOW_THREADS
        if (!ok) rc = -1;
        for (Py_ssize_t l = 0; !rc && l < lanes; l++) {
            Py_ssize_t a = off[l], b = off[l + 1];
            if (b - a == 1) {
                out[a] = 0;
                if (top < 1) top = 1;
            } else if (b - a > 1) {
                rc = lane_rows(s, d, a, b, out, &top, &open, &freerows, &last_end, &last_cap);
            }
        }
        Py_END_ALLOW_THREADS
        heap_free(&open);
        heap_free(&freerows);
        free(last_end);
    }
    PyBuffer_Release(&vs);
    PyBuffer_Release(&vd);
    PyBuffer_Release(&vo);
    PyBuffer_Release(&vout);
    if (rc == -1) return PyErr_NoMemory();
    if (rc == -3) {
        PyErr_SetString(PyExc_ValueError, "start, dur and out must be equally long, lane_offsets ascending within them");
        return NULL;
    }
    return PyLong_FromLong(rc == -2 ? -1 : (long)top);
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS, "rows(start, dur, lane_offsets, out) -> largest row + 1, or -1 past 32767"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rows(void) { return PyModule_Create(&module); }
