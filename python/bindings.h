// What every part of the Python module shares: how a long call runs (no
// GIL, Ctrl-C turned into a clean stop, then KeyboardInterrupt), how token
// ids come in, and how JSON goes out.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/core/stop.h"

namespace gpt2lab::python {

namespace py = pybind11;

// Raises KeyboardInterrupt if a stop was requested (a Ctrl-C during the
// call), clearing the request.
void raise_if_stopped();

// Runs f() without the GIL inside a StopSignalScope: a Ctrl-C meanwhile
// only asks the library to stop (no handler runs on a compute thread); f
// returns early where it can, and the interrupt is raised once it has.
template <class F>
auto without_gil(F&& f) {
  clear_stop_request();
  using R = decltype(f());
  if constexpr (std::is_void_v<R>) {
    {
      StopSignalScope scope;
      py::gil_scoped_release release;
      f();
    }
    raise_if_stopped();
  } else {
    std::optional<R> r;
    {
      StopSignalScope scope;
      py::gil_scoped_release release;
      r.emplace(f());
    }
    raise_if_stopped();
    return std::move(*r);
  }
}

// Arguments from Python, checked (python/args.cpp): each throws Error
// naming the argument (`name`) and what it must be; none lets pybind11's
// own conversion fail ("Unable to cast") or a value wrap.
//   int_arg:  an int (or numpy integer; not a bool) in [lo, hi]
//   seed_arg: an int in [0, 2**64 - 1]
//   real_arg: a finite float or int in [lo, hi] (lo excluded when lo_open)
//   bool_arg: True or False (or a numpy bool)
//   utf8_of:  a str as UTF-8; a lone surrogate (no UTF-8 form) is refused
//   str_arg:  a str as UTF-8 without NUL (a name, a spec, an option)
//   path_arg: str_arg of a str or an os.PathLike
int64_t int_arg(const py::handle& v, const std::string& name, int64_t lo, int64_t hi);
uint64_t seed_arg(const py::handle& v, const std::string& name);
double real_arg(const py::handle& v, const std::string& name, double lo, double hi, bool lo_open = false);
bool bool_arg(const py::handle& v, const std::string& name);
std::string utf8_of(const py::handle& v, const std::string& name);
std::string str_arg(const py::handle& v, const std::string& name);
std::string path_arg(const py::handle& v, const std::string& name);

// Token ids from a list or a numpy array of integers (any int dtype),
// 1-D; 2-D when `rows` is given (set to the row count).
std::vector<int> ids_from(const py::handle& obj, const char* what, int* rows = nullptr);

// A vector of ids as a numpy int32 array that owns it (no copy).
py::array_t<int32_t> ids_array(std::vector<int>&& ids);

// A Python bool, int (within 64 bits), float, str (str_arg), os.PathLike
// or None as JSON; `what` names it in the error for anything else.
nlohmann::json json_of(const py::handle& v, const char* what);

// A JSON value as the Python value json.loads gives.
py::object from_json(const nlohmann::json& j);

void add_tokenizer(py::module_& m);
void add_model(py::module_& m);
void add_train(py::module_& m);

}  // namespace gpt2lab::python
