/* The optional compiled replay of a step's critical-path graph (analysis/critical_path/walk.py's
 * replay_graph): the longest path from the step start to every node, in one pass over the nodes, where the numpy path
 * needs max-plus scans repeated until cross-lane hops settle and, on programs that synchronise after every kernel,
 * an ordered pass in Python (that path stays the reference and the fallback; tests/unit/test_critical_path_replay.py
 * compares them).
 *
 * replay(first, x1, x2, wc, w1, r, s, out) -> 0, or -1 when the predecessors form a cycle (out is then undefined;
 * the caller falls back to the reference, which raises on no cycle either: a cycle is a bug in the graph).
 *   first: bool (1 byte) per node, the first node of its lane (its lane predecessor is the step start S);
 *   x1, x2: int32 or int64 per node (both the same), a cross-lane predecessor node or -1;
 *   wc, w1, r: int64 ns per node, the lane edge's weight, x1's weight, the node's residual;
 *   s: int64 ns, the step start; out: int64 per node, written.
 *   out[n] = max(first[n] ? s + wc[n] : out[n - 1] + wc[n], out[x1[n]] + w1[n], out[x2[n]]) + r[n]
 * Nodes are finished depth first from each node in index order (lane predecessors come first within a lane, so the
 * depth is the chain of cross-lane hops not yet finished). The GIL is released while it runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

static int get(PyObject *obj, Py_buffer *view, int writable) {
    return PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT);
}

static int64_t pred_of(const void *x, int wide, Py_ssize_t n) {
    return wide ? ((const int64_t *)x)[n] : (int64_t)((const int32_t *)x)[n];
}

/* state per node: 0 not reached, 1 on the stack, 2 finished */
static int run(Py_ssize_t nn, const uint8_t *first, const void *x1, const void *x2, int wide, const int64_t *wc,
               const int64_t *w1, const int64_t *r, int64_t s, int64_t *out) {
    uint8_t *state = calloc(nn ? nn : 1, 1);
    int64_t *stack = malloc(sizeof(int64_t) * (nn ? nn : 1));
    uint8_t *next = malloc(nn ? nn : 1); /* per node on the stack: which predecessor to look at next (0..3) */
    if (!state || !stack || !next) {
        free(state);
        free(stack);
        free(next);
        return -2;
    }
    int rc = 0;
    for (Py_ssize_t root = 0; root < nn && rc == 0; root++) {
        if (state[root]) continue;
        Py_ssize_t sp = 0;
        stack[sp++] = root;
        state[root] = 1;
        next[root] = 0;
        while (sp) {
            int64_t n = stack[sp - 1];
            int64_t p = -1;
            while (next[n] < 3) {
                int k = next[n]++;
                int64_t q = k == 0 ? (first[n] ? -1 : n - 1) : pred_of(k == 1 ? x1 : x2, wide, n);
                if (q < 0) continue;
                if (q >= nn || state[q] == 1) { /* out of range (checked before any read), or a cycle */
                    rc = -1;
                    break;
                }
                if (state[q] == 2) continue;
                p = q;
                break;
            }
            if (rc) break;
            if (p >= 0) {
                stack[sp++] = p;
                state[p] = 1;
                next[p] = 0;
                continue;
            }
            int64_t best = first[n] ? s + wc[n] : out[n - 1] + wc[n];
            int64_t a = pred_of(x1, wide, n), b = pred_of(x2, wide, n);
            if (a >= 0 && out[a] + w1[n] > best) best = out[a] + w1[n];
            if (b >= 0 && out[b] > best) best = out[b];
            out[n] = best + r[n];
            state[n] = 2;
            sp--;
        }
    }
    free(state);
    free(stack);
    free(next);
    return rc;
}

static PyObject *replay(PyObject *self, PyObject *args) {
    PyObject *o[7];
    long long s;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOLO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &s, &o[6])) return NULL;
    Py_buffer v[7];
    static const char *names[] = {"first", "x1", "x2", "wc", "w1", "r", "out"};
    int got = 0;
    PyObject *result = NULL;
    for (; got < 7; got++) {
        if (get(o[got], &v[got], got == 6) < 0) goto done;
    }
    Py_ssize_t nn = v[0].len;
    if (v[0].itemsize != 1) {
        PyErr_SetString(PyExc_TypeError, "replay: first must be bool");
        goto done;
    }
    int wide = v[1].itemsize == 8;
    if ((v[1].itemsize != 4 && v[1].itemsize != 8) || v[2].itemsize != v[1].itemsize) {
        PyErr_SetString(PyExc_TypeError, "replay: x1 and x2 must both be int32 or both int64");
        goto done;
    }
    for (int i = 1; i < 7; i++) {
        if (v[i].len / v[i].itemsize != nn || (i >= 3 && v[i].itemsize != 8)) {
            PyErr_Format(PyExc_ValueError, "replay: %s must hold one %s per node", names[i],
                         i >= 3 ? "int64" : "index");
            goto done;
        }
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = run(nn, v[0].buf, v[1].buf, v[2].buf, wide, v[3].buf, v[4].buf, v[5].buf, (int64_t)s, v[6].buf);
    Py_END_ALLOW_THREADS
    if (rc == -2) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyLong_FromLong(rc);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"replay", replay, METH_VARARGS, "replay(first, x1, x2, wc, w1, r, s, out) -> 0, or -1 on a cycle"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_replay", NULL, -1, methods};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
