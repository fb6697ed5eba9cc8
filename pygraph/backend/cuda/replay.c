/* The native replay: a compiled model's call when every step is a graph, in one C function.
 *
 * Why: the Python call costs several microseconds more than the `cuGraphLaunch` it ends in (checks,
 * binding, the driver calls' wrappers), which is the whole per-call cost of a small model. This does
 * what `CudaRuntime.__call__` does on that path, with the same rules (`native.py` builds it from a
 * runtime and says which runtimes qualify), and returns None wherever the Python path must decide: an
 * input of another shape, dtype, device, strides or alignment, a changed watched tensor, another
 * current device, another current stream than the last call's (`stream`: Python orders the new stream
 * after the old one's work, which reused the same arena). Python then handles the call, errors included.
 *
 * A host scalar input (a Python number, carried by value in the table) takes a Python float, int or bool
 * of the kind it was traced as and writes its bits into its table word; anything else goes to Python.
 *
 * Parameter words are the truth shared with the Python path: a word holds what its graph node holds,
 * so a node is updated only when an address written into one of its words changes; a failed update
 * zeroes the words of every group the call changed, so that the next call, native or not, updates them.
 * Driver functions arrive as pointers (`cuGetProcAddress`), so this file needs no CUDA header.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>
#include <stdlib.h>
#include <string.h>

typedef int (*SetParams)(void *graph_exec, void *node, const void *params);
typedef int (*Launch)(void *graph_exec, void *stream);

typedef struct {
    uint64_t *word;   /* a 64-bit word of a node's parameter memory */
    uint64_t delta;   /* bytes added to the address written there */
    Py_ssize_t group; /* the nodes that read the word (a patched node, or every graph's table writer) */
} Place;

typedef struct {
    void *graph_exec;
    void *node;
    const void *params; /* a CUDA_KERNEL_NODE_PARAMS */
    Py_ssize_t group;
} Entry;

typedef struct {
    PyObject *shape, *dtype, *strides;
    long device; /* the CUDA device index it must be on */
    unsigned long long align;
    Py_ssize_t first, stop; /* its places */
    char number;            /* a host scalar's table type ('f' float32, 'd' float64, 'q' int64, '?' bool); 0: a tensor */
} Input;

typedef struct {
    PyObject *prototype, *shape, *strides;
    Py_ssize_t first, stop;
} Output;

typedef struct {
    PyObject_HEAD
    SetParams set_params;
    Launch launch;
    PyObject *get_device, *get_stream, *device, *tensor_type, *fail, *keep, *watch;
    Py_ssize_t n_inputs, n_outputs, n_places, n_entries, n_launches, n_groups;
    Input *inputs;
    Output *outputs;
    Place *places;
    Entry *entries;
    void **launches;
    char *dirty;
    unsigned long long *addresses; /* per input and output, during a call */
    unsigned long long stream;     /* the raw stream of the last call (set by Python, which orders a change) */
    int single;
} Replay;

static PyObject *s_shape, *s_dtype, *s_get_device, *s_stride, *s_data_ptr, *s_new_empty_strided, *s_version;

static int pointer_of(PyObject *tensor, unsigned long long *out) {
    PyObject *p = PyObject_CallMethodNoArgs(tensor, s_data_ptr);
    if (p == NULL) return -1;
    *out = PyLong_AsUnsignedLongLong(p);
    Py_DECREF(p);
    return (*out == (unsigned long long)-1 && PyErr_Occurred()) ? -1 : 0;
}

/* 1: equal, 0: not, -1: error */
static int attribute_equals(PyObject *object, PyObject *name, PyObject *expected) {
    PyObject *value = PyObject_GetAttr(object, name);
    if (value == NULL) return -1;
    int equal = PyObject_RichCompareBool(value, expected, Py_EQ);
    Py_DECREF(value);
    return equal;
}

/* 1: the input is what the graphs were built for (its address in *address), 0: not, -1: error */
static int check_input(Replay *self, Input *spec, PyObject *x, unsigned long long *address) {
    if (!PyObject_TypeCheck(x, (PyTypeObject *)self->tensor_type)) return 0;
    int ok = attribute_equals(x, s_shape, spec->shape);
    if (ok != 1) return ok;
    PyObject *dtype = PyObject_GetAttr(x, s_dtype);
    if (dtype == NULL) return -1;
    ok = dtype == spec->dtype;
    Py_DECREF(dtype);
    if (!ok) return 0;
    PyObject *device = PyObject_CallMethodNoArgs(x, s_get_device);
    if (device == NULL) return -1;
    long index = PyLong_AsLong(device);
    Py_DECREF(device);
    if (index == -1 && PyErr_Occurred()) return -1;
    if (index != spec->device) return 0; /* the CPU (-1) or another GPU */
    PyObject *strides = PyObject_CallMethodNoArgs(x, s_stride);
    if (strides == NULL) return -1;
    ok = PyObject_RichCompareBool(strides, spec->strides, Py_EQ);
    Py_DECREF(strides);
    if (ok != 1) return ok;
    if (pointer_of(x, address) < 0) return -1;
    return *address % spec->align == 0;
}

/* 1: a Python number of the input's kind (its table bits in *bits), 0: not, -1: error */
static int check_number(Input *spec, PyObject *x, unsigned long long *bits) {
    if (spec->number == '?') {
        if (!PyBool_Check(x)) return 0;
        *bits = x == Py_True;
        return 1;
    }
    if (spec->number == 'q') {
        if (!PyLong_CheckExact(x)) return 0; /* (a bool is not an int here, as in the Python path's dtype) */
        int overflow;
        long long value = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (value == -1 && PyErr_Occurred()) return -1;
        if (overflow) return 0;
        *bits = (unsigned long long)value;
        return 1;
    }
    if (!PyFloat_CheckExact(x) && !PyLong_CheckExact(x)) return 0;
    double value = PyFloat_AsDouble(x);
    if (value == -1.0 && PyErr_Occurred()) return -1;
    if (spec->number == 'd') {
        memcpy(bits, &value, sizeof value);
        return 1;
    }
    float single = (float)value;
    uint32_t word;
    memcpy(&word, &single, sizeof word);
    *bits = word; /* zero-extended, as `scalar_bits` */
    return 1;
}

/* 1: every watched tensor still has its version, 0: not, -1: error */
static int watched_unchanged(Replay *self) {
    Py_ssize_t n = PyTuple_GET_SIZE(self->watch);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(self->watch, i);
        int equal = attribute_equals(PyTuple_GET_ITEM(pair, 0), s_version, PyTuple_GET_ITEM(pair, 1));
        if (equal != 1) return equal;
    }
    return 1;
}

static void write_places(Replay *self, Py_ssize_t first, Py_ssize_t stop, unsigned long long address) {
    for (Py_ssize_t p = first; p < stop; p++) {
        Place *place = &self->places[p];
        uint64_t value = address + place->delta;
        if (*place->word != value) {
            *place->word = value;
            self->dirty[place->group] = 1;
        }
    }
}

static PyObject *fail(Replay *self, const char *call, int result) {
    PyObject *out = PyObject_CallFunction(self->fail, "si", call, result);
    Py_XDECREF(out);
    if (!PyErr_Occurred()) PyErr_Format(PyExc_RuntimeError, "%s failed: CUresult %d", call, result);
    return NULL;
}

/* Updates the nodes whose words changed, then launches the graphs; on failure, NULL with the error set. */
static PyObject *update_and_launch(Replay *self, void *stream) {
    for (Py_ssize_t e = 0; e < self->n_entries; e++) {
        Entry *entry = &self->entries[e];
        if (!self->dirty[entry->group]) continue;
        int result = self->set_params(entry->graph_exec, entry->node, entry->params);
        if (result != 0) { /* every changed group's words forget their values: all update next call */
            for (Py_ssize_t p = 0; p < self->n_places; p++)
                if (self->dirty[self->places[p].group]) *self->places[p].word = 0;
            memset(self->dirty, 0, (size_t)self->n_groups);
            return fail(self, "cuGraphExecKernelNodeSetParams", result);
        }
    }
    memset(self->dirty, 0, (size_t)self->n_groups);
    for (Py_ssize_t g = 0; g < self->n_launches; g++) {
        int result = self->launch(self->launches[g], stream);
        if (result != 0) return fail(self, "cuGraphLaunch", result);
    }
    Py_RETURN_NONE;
}

static PyObject *Replay_call(Replay *self, PyObject *args, PyObject *kwargs) {
    PyObject *inputs;
    if (kwargs != NULL || PyTuple_GET_SIZE(args) != 1) {
        PyErr_SetString(PyExc_TypeError, "a replay takes one tuple of inputs");
        return NULL;
    }
    inputs = PyTuple_GET_ITEM(args, 0);
    if (!PyTuple_Check(inputs) || PyTuple_GET_SIZE(inputs) != self->n_inputs) Py_RETURN_NONE;
    PyObject *device = PyObject_CallNoArgs(self->get_device);
    if (device == NULL) return NULL;
    int same = PyObject_RichCompareBool(device, self->device, Py_EQ);
    Py_DECREF(device);
    if (same != 1) return same < 0 ? NULL : Py_NewRef(Py_None);
    int ok = watched_unchanged(self);
    if (ok != 1) return ok < 0 ? NULL : Py_NewRef(Py_None);
    for (Py_ssize_t i = 0; i < self->n_inputs; i++) {
        Input *spec = &self->inputs[i];
        PyObject *x = PyTuple_GET_ITEM(inputs, i);
        ok = spec->number ? check_number(spec, x, &self->addresses[i]) : check_input(self, spec, x, &self->addresses[i]);
        if (ok != 1) return ok < 0 ? NULL : Py_NewRef(Py_None);
    }
    PyObject *raw = PyObject_CallOneArg(self->get_stream, self->device);
    if (raw == NULL) return NULL;
    void *stream = PyLong_AsVoidPtr(raw);
    Py_DECREF(raw);
    if (stream == NULL && PyErr_Occurred()) return NULL;
    if ((unsigned long long)(uintptr_t)stream != self->stream) Py_RETURN_NONE;
    PyObject *outputs = PyList_New(self->n_outputs);
    if (outputs == NULL) return NULL;
    for (Py_ssize_t j = 0; j < self->n_outputs; j++) {
        Output *spec = &self->outputs[j];
        PyObject *out = PyObject_CallMethodObjArgs(spec->prototype, s_new_empty_strided, spec->shape,
                                                   spec->strides, NULL);
        if (out == NULL || pointer_of(out, &self->addresses[self->n_inputs + j]) < 0) {
            Py_XDECREF(out);
            Py_DECREF(outputs);
            return NULL;
        }
        PyList_SET_ITEM(outputs, j, out);
    }
    /* every check passed and every output exists: only now are words written */
    for (Py_ssize_t i = 0; i < self->n_inputs; i++)
        write_places(self, self->inputs[i].first, self->inputs[i].stop, self->addresses[i]);
    for (Py_ssize_t j = 0; j < self->n_outputs; j++)
        write_places(self, self->outputs[j].first, self->outputs[j].stop, self->addresses[self->n_inputs + j]);
    PyObject *done = update_and_launch(self, stream);
    if (done == NULL) {
        Py_DECREF(outputs);
        return NULL;
    }
    Py_DECREF(done);
    if (!self->single) return outputs;
    PyObject *only = Py_NewRef(PyList_GET_ITEM(outputs, 0));
    Py_DECREF(outputs);
    return only;
}

static void Replay_dealloc(Replay *self) {
    for (Py_ssize_t i = 0; i < self->n_inputs && self->inputs; i++) {
        Py_XDECREF(self->inputs[i].shape);
        Py_XDECREF(self->inputs[i].dtype);
        Py_XDECREF(self->inputs[i].strides);
    }
    for (Py_ssize_t j = 0; j < self->n_outputs && self->outputs; j++) {
        Py_XDECREF(self->outputs[j].prototype);
        Py_XDECREF(self->outputs[j].shape);
        Py_XDECREF(self->outputs[j].strides);
    }
    free(self->inputs);
    free(self->outputs);
    free(self->places);
    free(self->entries);
    free(self->launches);
    free(self->dirty);
    free(self->addresses);
    Py_XDECREF(self->get_device);
    Py_XDECREF(self->get_stream);
    Py_XDECREF(self->device);
    Py_XDECREF(self->tensor_type);
    Py_XDECREF(self->fail);
    Py_XDECREF(self->keep);
    Py_XDECREF(self->watch);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void *zeroed(Py_ssize_t count, size_t size) { return calloc(count > 0 ? (size_t)count : 1, size); }

/* Replay(set_params, launch, get_device, get_stream, device, tensor_type, inputs, outputs, places,
 *        entries, launches, groups, single, fail, keep)
 * inputs: ((shape, dtype, device index, strides, align, first, stop) or, a host scalar, (table type, first,
 * stop), ...); outputs: ((prototype, shape, strides,
 * first, stop), ...); places: ((word address, delta, group), ...); entries: ((graph_exec, node, params
 * address, group), ...); launches: (graph_exec, ...); keep: what the addresses point into. */
static int Replay_init(Replay *self, PyObject *args, PyObject *kwargs) {
    unsigned long long set_params, launch;
    PyObject *get_device, *get_stream, *device, *tensor_type, *inputs, *outputs, *places, *entries, *launches;
    PyObject *fail, *keep;
    Py_ssize_t groups;
    int single;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "Replay takes positional arguments only");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "KKOOOOO!O!O!O!O!npOO", &set_params, &launch, &get_device, &get_stream, &device,
                          &tensor_type, &PyTuple_Type, &inputs, &PyTuple_Type, &outputs, &PyTuple_Type, &places,
                          &PyTuple_Type, &entries, &PyTuple_Type, &launches, &groups, &single, &fail, &keep))
        return -1;
    if (self->inputs != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a replay is initialised once");
        return -1;
    }
    if (!PyType_Check(tensor_type) || groups < 0) {
        PyErr_SetString(PyExc_TypeError, "tensor_type must be a type and groups >= 0");
        return -1;
    }
    self->set_params = (SetParams)(uintptr_t)set_params;
    self->launch = (Launch)(uintptr_t)launch;
    self->get_device = Py_NewRef(get_device);
    self->get_stream = Py_NewRef(get_stream);
    self->device = Py_NewRef(device);
    self->tensor_type = Py_NewRef(tensor_type);
    self->fail = Py_NewRef(fail);
    self->keep = Py_NewRef(keep);
    self->watch = PyTuple_New(0);
    self->n_inputs = PyTuple_GET_SIZE(inputs);
    self->n_outputs = PyTuple_GET_SIZE(outputs);
    self->n_places = PyTuple_GET_SIZE(places);
    self->n_entries = PyTuple_GET_SIZE(entries);
    self->n_launches = PyTuple_GET_SIZE(launches);
    self->n_groups = groups;
    self->single = single;
    self->inputs = zeroed(self->n_inputs, sizeof(Input));
    self->outputs = zeroed(self->n_outputs, sizeof(Output));
    self->places = zeroed(self->n_places, sizeof(Place));
    self->entries = zeroed(self->n_entries, sizeof(Entry));
    self->launches = zeroed(self->n_launches, sizeof(void *));
    self->dirty = zeroed(groups, 1);
    self->addresses = zeroed(self->n_inputs + self->n_outputs, sizeof(unsigned long long));
    if (!self->watch || !self->inputs || !self->outputs || !self->places || !self->entries || !self->launches ||
        !self->dirty || !self->addresses) {
        PyErr_NoMemory();
        return -1;
    }
    if (single && self->n_outputs != 1) {
        PyErr_SetString(PyExc_ValueError, "a single-output replay has exactly one output");
        return -1;
    }
    Py_ssize_t n_places = self->n_places;
    for (Py_ssize_t i = 0; i < self->n_inputs; i++) {
        Input *in = &self->inputs[i];
        PyObject *shape, *dtype, *strides, *spec = PyTuple_GET_ITEM(inputs, i);
        if (PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) == 3) {
            const char *type;
            if (!PyArg_ParseTuple(spec, "snn", &type, &in->first, &in->stop)) return -1;
            if (strlen(type) != 1 || !strchr("fdq?", type[0]) || in->first < 0 || in->stop < in->first ||
                in->stop > n_places) {
                PyErr_SetString(PyExc_ValueError, "a host scalar's table type or place range is invalid");
                return -1;
            }
            in->number = type[0];
            continue;
        }
        if (!PyArg_ParseTuple(spec, "OOlOKnn", &shape, &dtype, &in->device, &strides, &in->align, &in->first,
                              &in->stop))
            return -1;
        if (in->align == 0 || in->first < 0 || in->stop < in->first || in->stop > n_places) {
            PyErr_SetString(PyExc_ValueError, "an input's alignment or place range is invalid");
            return -1;
        }
        in->shape = Py_NewRef(shape);
        in->dtype = Py_NewRef(dtype);
        in->strides = Py_NewRef(strides);
    }
    for (Py_ssize_t j = 0; j < self->n_outputs; j++) {
        Output *out = &self->outputs[j];
        PyObject *prototype, *shape, *strides;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(outputs, j), "OOOnn", &prototype, &shape, &strides, &out->first,
                              &out->stop))
            return -1;
        if (out->first < 0 || out->stop < out->first || out->stop > n_places) {
            PyErr_SetString(PyExc_ValueError, "an output's place range is invalid");
            return -1;
        }
        out->prototype = Py_NewRef(prototype);
        out->shape = Py_NewRef(shape);
        out->strides = Py_NewRef(strides);
    }
    for (Py_ssize_t p = 0; p < n_places; p++) {
        unsigned long long word, delta;
        Place *place = &self->places[p];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(places, p), "KKn", &word, &delta, &place->group)) return -1;
        if (word == 0 || place->group < 0 || place->group >= groups) {
            PyErr_SetString(PyExc_ValueError, "a place's word or group is invalid");
            return -1;
        }
        place->word = (uint64_t *)(uintptr_t)word;
        place->delta = delta;
    }
    for (Py_ssize_t e = 0; e < self->n_entries; e++) {
        unsigned long long graph_exec, node, params;
        Entry *entry = &self->entries[e];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(entries, e), "KKKn", &graph_exec, &node, &params, &entry->group))
            return -1;
        if (entry->group < 0 || entry->group >= groups) {
            PyErr_SetString(PyExc_ValueError, "an entry's group is invalid");
            return -1;
        }
        entry->graph_exec = (void *)(uintptr_t)graph_exec;
        entry->node = (void *)(uintptr_t)node;
        entry->params = (const void *)(uintptr_t)params;
    }
    for (Py_ssize_t g = 0; g < self->n_launches; g++) {
        unsigned long long graph_exec = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(launches, g));
        if (PyErr_Occurred()) return -1;
        self->launches[g] = (void *)(uintptr_t)graph_exec;
    }
    return 0;
}

static PyObject *Replay_set_watch(Replay *self, PyObject *pairs) {
    if (!PyTuple_Check(pairs)) {
        PyErr_SetString(PyExc_TypeError, "watch takes a tuple of (tensor, version) pairs");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pairs); i++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "watch takes a tuple of (tensor, version) pairs");
            return NULL;
        }
    }
    Py_SETREF(self->watch, Py_NewRef(pairs));
    Py_RETURN_NONE;
}

static PyMethodDef Replay_methods[] = {
    {"set_watch", (PyCFunction)Replay_set_watch, METH_O,
     "set_watch(pairs): (tensor, version) pairs whose change sends calls to the Python path"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Replay_members[] = {
    {"stream", T_ULONGLONG, offsetof(Replay, stream), 0, "the raw stream a call must be on to stay in C"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ReplayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pygraph_replay.Replay",
    .tp_basicsize = sizeof(Replay),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled model's all-graph call (see replay.c)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Replay_init,
    .tp_dealloc = (destructor)Replay_dealloc,
    .tp_call = (ternaryfunc)Replay_call,
    .tp_methods = Replay_methods,
    .tp_members = Replay_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pygraph_replay",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit_pygraph_replay(void) {
    if (PyType_Ready(&ReplayType) < 0) return NULL;
    s_shape = PyUnicode_InternFromString("shape");
    s_dtype = PyUnicode_InternFromString("dtype");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_stride = PyUnicode_InternFromString("stride");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_new_empty_strided = PyUnicode_InternFromString("new_empty_strided");
    s_version = PyUnicode_InternFromString("_version");
    if (!s_shape || !s_dtype || !s_get_device || !s_stride || !s_data_ptr || !s_new_empty_strided || !s_version)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Replay", (PyObject *)&ReplayType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
