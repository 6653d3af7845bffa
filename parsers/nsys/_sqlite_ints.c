/* The optional compiled integer reader of the nsys loader (parsers/nsys/columns.py): it steps a SELECT of integer
 * expressions over one rowid range of one table and writes every value straight into an int64 buffer, so no
 * Python object and no text exists per row or per value. The aggregate-text path of columns.py (group_concat
 * parsed by numpy) stays the reference and the fallback: a chunk this reader cannot take whole falls back to it.
 *
 * It calls the very SQLite library Python's sqlite3 module uses: bind(path) dlopen()s the module's shared object
 * (_sqlite3.*.so; already loaded, so this only takes a reference) and looks the few sqlite3_* functions up by
 * name, through its dependencies (libsqlite3.so) or in itself (a statically linked SQLite). No SQLite header and
 * no link-time dependency: where the functions cannot be found, bind returns False and the loader keeps its
 * text path.
 *
 *   bind(path) -> bool
 *   open(uri) -> capsule: a read-only connection (SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX),
 *       with query_only, trusted_schema off and the memory map of `mmap_bytes` pages set, as connect_readonly in
 *       schema.py does. Raises RuntimeError when SQLite cannot open it. One connection per thread.
 *   read(capsule, sql, lo, hi, out[, offset, room]) -> int: runs `sql` with ?1 = lo, ?2 = hi; out is a writable
 *       C-contiguous int64 buffer of shape (k, n) with k = the statement's column count. Row j's value of column i
 *       goes to out[i][offset + j], for at most `room` rows (default: n - offset). Returns the number of rows, or -1
 *       when a value is not an SQLite INTEGER (NULL, REAL, TEXT, BLOB) or there are more than `room` rows (the
 *       caller then reads the chunk the text way, which decides how such values are treated). Raises RuntimeError
 *       with SQLite's message on any SQLite error. The GIL is released while SQLite steps.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

#define SQLITE_OK 0
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_INTEGER 1
#define SQLITE_OPEN_READONLY 0x00000001
#define SQLITE_OPEN_URI 0x00000040
#define SQLITE_OPEN_NOMUTEX 0x00008000

static int (*p_open_v2)(const char *, sqlite3 **, int, const char *);
static int (*p_close)(sqlite3 *);
static int (*p_exec)(sqlite3 *, const char *, void *, void *, char **);
static int (*p_prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
static int (*p_bind_int64)(sqlite3_stmt *, int, int64_t);
static int (*p_step)(sqlite3_stmt *);
static int (*p_column_count)(sqlite3_stmt *);
static int (*p_column_type)(sqlite3_stmt *, int);
static int64_t (*p_column_int64)(sqlite3_stmt *, int);
static int (*p_finalize)(sqlite3_stmt *);
static const char *(*p_errmsg)(sqlite3 *);
static void (*p_free)(void *);
static int bound = 0;

#define CAPSULE "gputop_trace.nsys.sqlite3"

static PyObject *bind(PyObject *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    if (bound)
        Py_RETURN_TRUE;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        Py_RETURN_FALSE;
#define SYM(var, name)                                                                                                 \
    *(void **)(&var) = dlsym(h, name);                                                                                 \
    if (!var)                                                                                                          \
        Py_RETURN_FALSE;
    SYM(p_open_v2, "sqlite3_open_v2")
    SYM(p_close, "sqlite3_close")
    SYM(p_exec, "sqlite3_exec")
    SYM(p_prepare_v2, "sqlite3_prepare_v2")
    SYM(p_bind_int64, "sqlite3_bind_int64")
    SYM(p_step, "sqlite3_step")
    SYM(p_column_count, "sqlite3_column_count")
    SYM(p_column_type, "sqlite3_column_type")
    SYM(p_column_int64, "sqlite3_column_int64")
    SYM(p_finalize, "sqlite3_finalize")
    SYM(p_errmsg, "sqlite3_errmsg")
    SYM(p_free, "sqlite3_free")
#undef SYM
    bound = 1; /* the handle is kept open for the life of the process, as Python keeps the module */
    Py_RETURN_TRUE;
}

static void close_capsule(PyObject *cap) {
    sqlite3 *db = PyCapsule_GetPointer(cap, CAPSULE);
    if (db)
        p_close(db);
}

static PyObject *sqlite_error(sqlite3 *db) {
    PyErr_Format(PyExc_RuntimeError, "SQLite: %s", db ? p_errmsg(db) : "out of memory");
    return NULL;
}

static PyObject *open_db(PyObject *self, PyObject *args) {
    const char *uri;
    long long mmap_bytes;
    if (!PyArg_ParseTuple(args, "sL", &uri, &mmap_bytes))
        return NULL;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "SQLite functions not bound");
        return NULL;
    }
    sqlite3 *db = NULL;
    int rc = p_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        PyObject *r = sqlite_error(db);
        if (db)
            p_close(db);
        return r;
    }
    char pragmas[160];
    snprintf(pragmas, sizeof pragmas, "PRAGMA query_only = ON; PRAGMA trusted_schema = OFF; PRAGMA mmap_size = %lld;",
             mmap_bytes);
    char *err = NULL;
    if (p_exec(db, pragmas, NULL, NULL, &err) != SQLITE_OK) {
        PyErr_Format(PyExc_RuntimeError, "SQLite: %s", err ? err : "PRAGMA failed");
        if (err)
            p_free(err);
        p_close(db);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(db, CAPSULE, close_capsule);
    if (!cap)
        p_close(db);
    return cap;
}

static PyObject *read_ints(PyObject *self, PyObject *args) {
    PyObject *cap;
    const char *sql;
    long long lo, hi;
    Py_buffer out;
    Py_ssize_t offset = 0, room = -1;
    if (!PyArg_ParseTuple(args, "OsLLw*|nn", &cap, &sql, &lo, &hi, &out, &offset, &room))
        return NULL;
    sqlite3 *db = PyCapsule_GetPointer(cap, CAPSULE);
    if (!db) {
        PyBuffer_Release(&out);
        return NULL;
    }
    sqlite3_stmt *st = NULL;
    if (p_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || !st) {
        PyBuffer_Release(&out);
        if (st)
            p_finalize(st);
        return sqlite_error(db);
    }
    int k = p_column_count(st);
    Py_ssize_t stride = k > 0 ? out.len / ((Py_ssize_t)sizeof(int64_t) * k) : 0;
    if (room < 0)
        room = stride - offset;
    if (k == 0 || out.len % ((Py_ssize_t)sizeof(int64_t) * k) != 0 || out.itemsize != (Py_ssize_t)sizeof(int64_t) ||
        offset < 0 || offset + room > stride) {
        p_finalize(st);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "out must be int64 of shape (columns, n) with offset + room <= n");
        return NULL;
    }
    Py_ssize_t cap_rows = room;
    int64_t *buf = (int64_t *)out.buf + offset;
    Py_ssize_t n = 0;
    int rc = SQLITE_OK, mismatch = 0;
    if (p_bind_int64(st, 1, lo) != SQLITE_OK || p_bind_int64(st, 2, hi) != SQLITE_OK) {
        p_finalize(st);
        PyBuffer_Release(&out);
        return sqlite_error(db);
    }
    Py_BEGIN_ALLOW_THREADS;
    while ((rc = p_step(st)) == SQLITE_ROW) {
        if (n == cap_rows) {
            mismatch = 1;
            break;
        }
        for (int i = 0; i < k; i++) {
            if (p_column_type(st, i) != SQLITE_INTEGER) {
                mismatch = 1;
                break;
            }
            buf[(Py_ssize_t)i * stride + n] = p_column_int64(st, i);
        }
        if (mismatch)
            break;
        n++;
    }
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&out);
    if (!mismatch && rc != SQLITE_DONE) {
        PyObject *r = sqlite_error(db);
        p_finalize(st);
        return r;
    }
    p_finalize(st);
    return PyLong_FromSsize_t(mismatch ? -1 : n);
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "bind(path) -> bool: look the SQLite functions up in the library at path."},
    {"open", open_db, METH_VARARGS, "open(uri, mmap_bytes) -> connection capsule (read-only)."},
    {"read", read_ints, METH_VARARGS,
     "read(conn, sql, lo, hi, out[, offset, room]) -> rows, or -1 when a value is no integer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sqlite_ints", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sqlite_ints(void) { return PyModule_Create(&module); }
