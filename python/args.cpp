// Arguments as Python gives them, converted with explicit checks: a wrong
// type or value is a gpt2lab.Error naming the argument and what it must
// be, as the CLI's flag checks say it, never pybind11's "Unable to cast"
// or an overflow.
#include <cmath>
#include <cstdio>
#include <limits>

#include "bindings.h"

namespace gpt2lab::python {
namespace {

std::string type_name(const py::handle& v) { return py::str(py::type::of(v).attr("__name__")).cast<std::string>(); }

// repr(v), but a huge int by its size: Python refuses to print an int of
// more than 4300 digits, and a message has no use for one.
std::string shown(const py::handle& v) {
  if (py::isinstance<py::int_>(v)) {
    const auto bits = v.attr("bit_length")().cast<long long>();
    if (bits > 256) return "<an integer of " + std::to_string(bits) + " bits>";
  }
  return py::repr(v).cast<std::string>();
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Python's bool or numpy's (no Python bool, and it has __index__; named
// bool_ before numpy 2, bool since).
bool is_bool(const py::handle& v) {
  const std::string t = type_name(v);
  return py::isinstance<py::bool_>(v) || t == "bool_" || t == "bool";
}

// An int (or anything with __index__, such as a numpy integer), not a bool.
py::int_ integer_of(const py::handle& v, const std::string& name, const std::string& want) {
  const bool integer = !is_bool(v) && (py::isinstance<py::int_>(v) || py::hasattr(v, "__index__"));
  if (!integer) throw Error(name + " must be " + want + ", got " + type_name(v) + " " + shown(v));
  return py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
}

}  // namespace

int64_t int_arg(const py::handle& v, const std::string& name, int64_t lo, int64_t hi) {
  const std::string want = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  const py::int_ i = integer_of(v, name, want);
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || x < lo || x > hi) throw Error(name + " = " + shown(i) + " is out of range: it must be " + want);
  return x;
}

uint64_t seed_arg(const py::handle& v, const std::string& name) {
  const std::string want = "an integer in [0, " + std::to_string(std::numeric_limits<uint64_t>::max()) + "]";
  const py::int_ i = integer_of(v, name, want);
  if (!i) throw py::error_already_set();
  const bool negative = PyObject_RichCompareBool(i.ptr(), py::int_(0).ptr(), Py_LT) == 1;
  const unsigned long long x = negative ? 0 : PyLong_AsUnsignedLongLong(i.ptr());
  if (negative || (x == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
    PyErr_Clear();
    throw Error(name + " = " + shown(i) + " is out of range: it must be " + want);
  }
  return x;
}

double real_arg(const py::handle& v, const std::string& name, double lo, double hi, bool lo_open) {
  const std::string want =
      "a finite number " + std::string(lo_open ? "> " : ">= ") + number_text(lo) + " and <= " + number_text(hi);
  const bool number = !is_bool(v) && (py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v) ||
                                      py::hasattr(v, "__float__") || py::hasattr(v, "__index__"));
  if (!number) throw Error(name + " must be " + want + ", got " + type_name(v) + " " + shown(v));
  const double x = PyFloat_AsDouble(v.ptr());
  if (x == -1.0 && PyErr_Occurred()) {
    const bool too_large = PyErr_ExceptionMatches(PyExc_OverflowError) != 0;  // an int beyond a double
    PyErr_Clear();
    if (!too_large) throw Error(name + " must be " + want + ", got " + type_name(v) + " " + shown(v));
    throw Error(name + " = " + shown(v) + " is out of range: it must be " + want);
  }
  const bool ok = std::isfinite(x) && (lo_open ? x > lo : x >= lo) && x <= hi;
  if (!ok) throw Error(name + " = " + shown(v) + " is out of range: it must be " + want);
  return x;
}

bool bool_arg(const py::handle& v, const std::string& name) {
  if (is_bool(v)) return PyObject_IsTrue(v.ptr()) == 1;
  throw Error(name + " must be True or False, got " + type_name(v) + " " + shown(v));
}

std::string utf8_of(const py::handle& v, const std::string& name) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(v.ptr(), &n);
  if (p) return std::string(p, static_cast<size_t>(n));
  PyErr_Clear();
  // The one str that has no UTF-8: one holding a lone surrogate (from
  // os.fsdecode of undecodable bytes, or a JSON "\udc80").
  const py::str s = py::reinterpret_borrow<py::str>(v);
  const Py_ssize_t len = PyUnicode_GetLength(s.ptr());
  for (Py_ssize_t i = 0; i < len; ++i) {
    const Py_UCS4 c = PyUnicode_ReadChar(s.ptr(), i);
    if (c >= 0xD800 && c <= 0xDFFF) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
      throw Error(name + ": the string holds a lone surrogate (" + code + " at index " + std::to_string(i) +
                  "), which is not valid Unicode and has no UTF-8 form; pass valid text (or bytes, where bytes "
                  "are accepted)");
    }
  }
  throw Error(name + ": the string cannot be encoded as UTF-8");
}

std::string str_arg(const py::handle& v, const std::string& name) {
  if (!py::isinstance<py::str>(v)) throw Error(name + " must be a str, got " + type_name(v) + " " + shown(v));
  std::string s = utf8_of(v, name);
  // No argv can hold a NUL, and the OS would cut a path at it.
  const size_t nul = s.find('\0');
  if (nul != std::string::npos)
    throw Error(name + ": the string holds a NUL character (at byte " + std::to_string(nul) +
                "), which no path or name can hold");
  return s;
}

std::string path_arg(const py::handle& v, const std::string& name) {
  if (!py::isinstance<py::str>(v) && py::hasattr(v, "__fspath__")) {
    const py::object p = v.attr("__fspath__")();
    if (!py::isinstance<py::str>(p))
      throw Error(name + " must be a path as str (or an os.PathLike giving one), got " + type_name(p));
    return str_arg(p, name);
  }
  if (!py::isinstance<py::str>(v))
    throw Error(name + " must be a path (str or os.PathLike), got " + type_name(v) + " " + shown(v));
  return str_arg(v, name);
}

}  // namespace gpt2lab::python
