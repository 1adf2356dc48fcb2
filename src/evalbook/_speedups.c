/* evalbook._speedups: the run log's lines of a finished case, rendered in C.
 *
 * Optional: when this module is not built (no C compiler), `_events.py` renders the same
 * bytes in Python. `case_block(ctx, pos, case, started)` takes the common case only (a text
 * output, no error, finite times, every record a plain score value whose line tail the
 * encoder has cached); anything else goes to `ctx`'s Python `slow` function, which also
 * fills the cache. Strings are JSON-escaped by `json`'s own C function (`enc` in `ctx`), so
 * both paths give identical bytes; tests/test_events.py pins that as a property.
 *
 * ctx = (case_ids: list[str], tails: list[dict[float, str]], started_head: str,
 *        record_head: str, ended_head: str, outcomes: tuple[str, ...], enc, slow)
 *
 * On Linux, `case_ended(state, pos, case)` also copies those bytes straight into the
 * memory-mapped log (see its comment below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define STACK_PIECES 64
#define MAX_OWNED 16   /* new references one case may hold (else: the Python path) */
#define MAX_NUMBERS 16 /* integers one case may format (else: the Python path) */
#define MAX_EXACT 9.0e15 /* below 2**53: a double times 1e6 rounds to an exact integer */

typedef struct {
    const char *p;
    Py_ssize_t n;
} piece;

typedef struct {
    piece *pieces;
    Py_ssize_t len, cap;
    piece stack[STACK_PIECES];
    PyObject *owned[MAX_OWNED]; /* new references held until the bytes are built */
    int n_owned;
    char numbers[MAX_NUMBERS][24];
    int n_numbers;
} builder;

static void builder_init(builder *b) {
    b->pieces = b->stack;
    b->len = 0;
    b->cap = STACK_PIECES;
    b->n_owned = 0;
    b->n_numbers = 0;
}

static void builder_free(builder *b) {
    for (int i = 0; i < b->n_owned; i++) {
        Py_DECREF(b->owned[i]);
    }
    if (b->pieces != b->stack) {
        PyMem_Free(b->pieces);
    }
}

/* 1 on success, -1 with an exception set (as the other add_* return 1, 0 or -1) */
static int add(builder *b, const char *p, Py_ssize_t n) {
    if (b->len == b->cap) {
        Py_ssize_t cap = b->cap * 2;
        piece *bigger = PyMem_Malloc(sizeof(piece) * cap);
        if (bigger == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(bigger, b->pieces, sizeof(piece) * b->len);
        if (b->pieces != b->stack) {
            PyMem_Free(b->pieces);
        }
        b->pieces = bigger;
        b->cap = cap;
    }
    b->pieces[b->len].p = p;
    b->pieces[b->len].n = n;
    b->len++;
    return 1;
}

#define ADD_LITERAL(b, s) add((b), (s), (Py_ssize_t)(sizeof(s) - 1))

/* An ASCII str's characters; 1 when taken, 0 when `s` is not an ASCII str */
static int ascii(PyObject *s, piece *out) {
    if (!PyUnicode_Check(s)) {
        return 0;
    }
#if PY_VERSION_HEX < 0x030C0000 /* 3.12 dropped not-ready strings */
    if (PyUnicode_READY(s) < 0) {
        PyErr_Clear();
        return 0;
    }
#endif
    if (!PyUnicode_IS_ASCII(s)) {
        return 0;
    }
    out->p = (const char *)PyUnicode_DATA(s);
    out->n = PyUnicode_GET_LENGTH(s);
    return 1;
}

/* 1 added, 0 not the common case, -1 error */
static int add_str(builder *b, PyObject *s) {
    piece pc;
    if (!ascii(s, &pc)) {
        return 0;
    }
    return add(b, pc.p, pc.n);
}

/* The JSON text of a str through `enc` (kept alive until the end); 1, 0 or -1 */
static int json_text(builder *b, PyObject *enc, PyObject *s, piece *out) {
    if (b->n_owned == MAX_OWNED) {
        return 0;
    }
    PyObject *text = PyObject_CallOneArg(enc, s);
    if (text == NULL) {
        return -1;
    }
    b->owned[b->n_owned++] = text;
    return ascii(text, out);
}

static int add_json(builder *b, PyObject *enc, PyObject *s) {
    piece pc;
    int r = json_text(b, enc, s, &pc);
    if (r <= 0) {
        return r;
    }
    return add(b, pc.p, pc.n);
}

/* decimal digits of v, as Python's str(int) writes them (snprintf costs several times more) */
static int add_int(builder *b, long long v) {
    if (b->n_numbers == MAX_NUMBERS) {
        return 0;
    }
    char *buf = b->numbers[b->n_numbers++];
    char *end = buf + 24, *p = end;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) {
        *--p = '-';
    }
    return add(b, p, end - p);
}

/* A Python int as long long; 1 taken, 0 not an int that fits */
static int as_long(PyObject *o, long long *out) {
    if (!PyLong_CheckExact(o)) {
        return 0;
    }
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (*out == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* round(x * 1e6) as Python computes it (half to even); 0 when NaN or too large */
static int micros(PyObject *o, long long *out) {
    if (!PyFloat_CheckExact(o)) {
        return 0;
    }
    double x = PyFloat_AS_DOUBLE(o) * 1e6;
    if (!(fabs(x) < MAX_EXACT)) {
        return 0;
    }
    *out = (long long)nearbyint(x);
    return 1;
}

#define TRY(call)            \
    do {                     \
        int r_ = (call);     \
        if (r_ <= 0) {       \
            status = r_;     \
            goto done;       \
        }                    \
    } while (0)

/* The pieces of a finished case's lines into `b`: 1 the common case, 0 not (the Python
 * path writes it), -1 an error. ctx is the encoder's 8-tuple (see the top of the file). */
static int render(builder *b, PyObject *ctx, PyObject *pos_obj, PyObject *c, PyObject *started) {
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != 8) {
        PyErr_SetString(PyExc_TypeError, "evalbook._speedups: ctx must be the encoder's 8-tuple");
        return -1;
    }
    PyObject *ids = PyTuple_GET_ITEM(ctx, 0), *tails = PyTuple_GET_ITEM(ctx, 1);
    PyObject *outcomes = PyTuple_GET_ITEM(ctx, 5), *enc = PyTuple_GET_ITEM(ctx, 6);
    int status = 1;
    long long pos, outcome, attempts, started_us, duration_us;

    if (!PyList_Check(ids) || !PyList_Check(tails) || !PyTuple_Check(outcomes) ||
        !PyTuple_Check(c) || PyTuple_GET_SIZE(c) != 8 || !PyList_Check(started)) {
        status = 0;
        goto done;
    }
    TRY(as_long(pos_obj, &pos));
    if (pos < 0 || pos >= PyList_GET_SIZE(ids)) {
        status = 0;
        goto done;
    }
    PyObject *output = PyTuple_GET_ITEM(c, 2), *records = PyTuple_GET_ITEM(c, 7);
    TRY(as_long(PyTuple_GET_ITEM(c, 0), &outcome));
    TRY(as_long(PyTuple_GET_ITEM(c, 1), &attempts));
    if (outcome < 0 || outcome >= PyTuple_GET_SIZE(outcomes) || !PyUnicode_CheckExact(output) ||
        PyTuple_GET_ITEM(c, 3) != Py_None || PyTuple_GET_ITEM(c, 4) != Py_None) {
        status = 0;
        goto done;
    }
    TRY(micros(PyTuple_GET_ITEM(c, 5), &started_us));
    TRY(micros(PyTuple_GET_ITEM(c, 6), &duration_us));
    PyObject *seq = PySequence_Fast(records, "records");
    if (seq == NULL) {
        status = -1;
        goto done;
    }
    b->owned[b->n_owned++] = seq;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != PyList_GET_SIZE(tails)) {
        status = 0;
        goto done;
    }

    /* the case.started lines noted since the last write */
    piece cid;
    TRY(json_text(b, enc, PyList_GET_ITEM(ids, pos), &cid));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(started); i++) {
        PyObject *s = PyList_GET_ITEM(started, i);
        long long p, attempt, at_us;
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 3) {
            status = 0;
            goto done;
        }
        TRY(as_long(PyTuple_GET_ITEM(s, 0), &p));
        TRY(as_long(PyTuple_GET_ITEM(s, 1), &attempt));
        TRY(as_long(PyTuple_GET_ITEM(s, 2), &at_us));
        if (p < 0 || p >= PyList_GET_SIZE(ids)) {
            status = 0;
            goto done;
        }
        TRY(add_str(b, PyTuple_GET_ITEM(ctx, 2)));
        if (p == pos) {
            TRY(add(b, cid.p, cid.n));
        } else {
            TRY(add_json(b, enc, PyList_GET_ITEM(ids, p)));
        }
        TRY(ADD_LITERAL(b, ",\"attempt\":"));
        TRY(add_int(b, attempt));
        TRY(ADD_LITERAL(b, ",\"at_us\":"));
        TRY(add_int(b, at_us));
        TRY(ADD_LITERAL(b, "}\n"));
    }
    /* one score.recorded line per score: the case's head, then the cached tail */
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, j);
        long long st;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 7) {
            status = 0;
            goto done;
        }
        TRY(as_long(PyTuple_GET_ITEM(r, 0), &st));
        if (st != 0 || PyTuple_GET_ITEM(r, 4) != Py_None || PyTuple_GET_ITEM(r, 5) != Py_None ||
            PyTuple_GET_ITEM(r, 6) != Py_None) {
            status = 0;
            goto done;
        }
        PyObject *cache = PyList_GET_ITEM(tails, j);
        if (!PyDict_CheckExact(cache)) {
            status = 0;
            goto done;
        }
        PyObject *tail = PyDict_GetItemWithError(cache, PyTuple_GET_ITEM(r, 1)); /* borrowed */
        if (tail == NULL) {
            status = PyErr_Occurred() ? -1 : 0; /* a value not seen yet: Python caches it */
            goto done;
        }
        TRY(add_str(b, PyTuple_GET_ITEM(ctx, 3)));
        TRY(add(b, cid.p, cid.n));
        TRY(add_str(b, tail));
    }
    /* case.ended */
    TRY(add_str(b, PyTuple_GET_ITEM(ctx, 4)));
    TRY(add(b, cid.p, cid.n));
    TRY(ADD_LITERAL(b, ",\"attempt\":"));
    TRY(add_int(b, attempts));
    TRY(ADD_LITERAL(b, ",\"outcome\":\""));
    TRY(add_str(b, PyTuple_GET_ITEM(outcomes, outcome)));
    TRY(ADD_LITERAL(b, "\",\"output\":"));
    TRY(add_json(b, enc, output));
    TRY(ADD_LITERAL(b, ",\"started_us\":"));
    TRY(add_int(b, started_us));
    TRY(ADD_LITERAL(b, ",\"duration_us\":"));
    TRY(add_int(b, duration_us));
    TRY(ADD_LITERAL(b, "}\n"));

done:
    return status;
}

static PyObject *join(builder *b) {
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < b->len; i++) {
        total += b->pieces[i].n;
    }
    PyObject *result = PyBytes_FromStringAndSize(NULL, total);
    if (result != NULL) {
        char *out = PyBytes_AS_STRING(result);
        for (Py_ssize_t i = 0; i < b->len; i++) {
            memcpy(out, b->pieces[i].p, b->pieces[i].n);
            out += b->pieces[i].n;
        }
    }
    return result;
}

/* case_block(ctx, pos, case, started) -> bytes: the lines of a finished case */
static PyObject *case_block(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "case_block(ctx, pos, case, started)");
        return NULL;
    }
    builder b;
    builder_init(&b);
    int status = render(&b, args[0], args[1], args[2], args[3]);
    PyObject *result = status == 1 ? join(&b) : NULL;
    builder_free(&b);
    if (status < 0) {
        return NULL;
    }
    if (status == 1) {
        return result;
    }
    PyErr_Clear();
    PyObject *slow = PyTuple_GET_ITEM(args[0], 7);
    return PyObject_Vectorcall(slow, args + 1, 3, NULL); /* slow(pos, case, started) */
}

#ifdef __linux__
#include <time.h>
#define HAVE_APPEND 1

/* case_ended(state, pos, case) -> None: log a finished case straight into the mapped log.
 *
 * state = (ctx, started: list, cursor: list, fallback). cursor is the log's
 * [map or None, offset in the map, sync deadline in CLOCK_MONOTONIC ns] (`_logfile.LogFile`).
 * The common case, when the map has room and no fsync is due, is copied into the map and the
 * offset advanced; anything else is `fallback(pos, case)`, the sink's Python method. */
static PyObject *case_ended(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 4) {
        PyErr_SetString(PyExc_TypeError, "case_ended(state, pos, case)");
        return NULL;
    }
    PyObject *state = args[0];
    PyObject *ctx = PyTuple_GET_ITEM(state, 0), *started = PyTuple_GET_ITEM(state, 1);
    PyObject *cursor = PyTuple_GET_ITEM(state, 2), *fallback = PyTuple_GET_ITEM(state, 3);
    PyObject *map, *moved;
    long long at, deadline;
    struct timespec now;
    Py_buffer view;
    builder b;
    builder_init(&b);
    int status = 0;
    if (!PyList_Check(cursor) || PyList_GET_SIZE(cursor) != 3 || !PyList_Check(started)) {
        goto done;
    }
    map = PyList_GET_ITEM(cursor, 0);
    if (map == Py_None || !as_long(PyList_GET_ITEM(cursor, 1), &at) ||
        !as_long(PyList_GET_ITEM(cursor, 2), &deadline)) {
        goto done;
    }
    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0 ||
        (long long)now.tv_sec * 1000000000LL + now.tv_nsec > deadline) {
        goto done; /* an fsync is due: the Python path starts it */
    }
    status = render(&b, ctx, args[1], args[2], started);
    if (status != 1) {
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < b.len; i++) {
        total += b.pieces[i].n;
    }
    if (PyObject_GetBuffer(map, &view, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        status = 0;
        goto done;
    }
    if (at < 0 || at + total > view.len) { /* the window is full: the Python path maps on */
        PyBuffer_Release(&view);
        status = 0;
        goto done;
    }
    char *out = (char *)view.buf + at;
    for (Py_ssize_t i = 0; i < b.len; i++) {
        memcpy(out, b.pieces[i].p, b.pieces[i].n);
        out += b.pieces[i].n;
    }
    PyBuffer_Release(&view);
    moved = PyLong_FromLongLong(at + total);
    if (moved == NULL) {
        status = -1;
        goto done;
    }
    PyList_SetItem(cursor, 1, moved); /* steals the reference */
    if (PyList_SetSlice(started, 0, PyList_GET_SIZE(started), NULL) < 0) {
        status = -1;
    }
done:
    builder_free(&b);
    if (status < 0) {
        return NULL;
    }
    if (status == 1) {
        Py_RETURN_NONE;
    }
    PyErr_Clear();
    return PyObject_Vectorcall(fallback, args + 1, 2, NULL); /* fallback(pos, case) */
}
#endif

static PyMethodDef methods[] = {
    {"case_block", (PyCFunction)(void (*)(void))case_block, METH_FASTCALL,
     "case_block(ctx, pos, case, started) -> bytes: a finished case's log lines."},
#ifdef HAVE_APPEND
    {"case_ended", (PyCFunction)(void (*)(void))case_ended, METH_FASTCALL,
     "case_ended(state, pos, case) -> None: log a finished case into the mapped log."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "evalbook._speedups", "The run log's hot path in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
