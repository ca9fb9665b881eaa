// What every part of the Python module shares: how a long call runs (no
// GIL, Ctrl-C turned into a clean stop, then KeyboardInterrupt), how token
// ids come in, and how JSON goes out.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <optional>
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

// Token ids from a list or a numpy array of integers (any int dtype),
// 1-D; 2-D when `rows` is given (set to the row count).
std::vector<int> ids_from(const py::handle& obj, const char* what, int* rows = nullptr);

// A vector of ids as a numpy int32 array that owns it (no copy).
py::array_t<int32_t> ids_array(std::vector<int>&& ids);

// A Python bool, int, float, str or None as JSON; `what` names it in the
// error for anything else.
nlohmann::json json_of(const py::handle& v, const char* what);

// A JSON value as the Python value json.loads gives.
py::object from_json(const nlohmann::json& j);

void add_tokenizer(py::module_& m);
void add_model(py::module_& m);
void add_train(py::module_& m);

}  // namespace gpt2lab::python
