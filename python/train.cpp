// gpt2lab.train and gpt2lab.read_metrics: the CLI's trainer, given its
// options as keywords (the flags' names), and what a run wrote.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "bindings.h"
#include "gpt2lab/train/progress.h"
#include "gpt2lab/train/request.h"
#include "gpt2lab/train/token_dataset.h"
#include "gpt2lab/train/trainer.h"

namespace gpt2lab::python {
namespace {

const char* kind_name(TrainEvent::Kind k) {
  switch (k) {
    case TrainEvent::Kind::note: return "note";
    case TrainEvent::Kind::start: return "start";
    case TrainEvent::Kind::step: return "step";
    case TrainEvent::Kind::eval: return "eval";
    case TrainEvent::Kind::diverged: return "diverged";
    case TrainEvent::Kind::interrupted: return "interrupted";
    case TrainEvent::Kind::done: return "done";
    case TrainEvent::Kind::complete: return "complete";
  }
  return "note";
}

py::dict event_dict(const TrainEvent& e) {
  py::dict d;
  d["kind"] = kind_name(e.kind);
  d["step"] = e.step;
  d["steps"] = e.steps;
  d["loss"] = e.loss;
  d["lr"] = e.lr;
  d["grad_norm"] = e.grad_norm;
  d["tokens_per_s"] = e.tokens_per_s;
  d["eta_s"] = e.eta_s;
  d["val_loss"] = e.val_loss;
  d["first"] = e.first;
  d["text"] = e.text;
  return d;
}

// The progress function the trainer calls (on this thread, without the
// GIL): the Python callback with each event as a dict, or the CLI's
// printout. An exception in the callback, or a KeyboardInterrupt Python
// itself caught, stops the run cleanly (its step finished and saved) and
// is raised once train returns.
struct Progress {
  py::object callback;  // a callable, None, or "stderr"
  long log_every = 10;
  std::optional<py::error_already_set> raised;

  ProgressFn fn() {
    ProgressFn print = stderr_progress(log_every);
    const bool to_stderr = py::isinstance<py::str>(callback);
    return [this, print, to_stderr](const TrainEvent& e) {
      if (to_stderr) print(e);
      py::gil_scoped_acquire gil;
      if (raised) return;
      try {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (!to_stderr && !callback.is_none()) callback(event_dict(e));
      } catch (py::error_already_set& err) {
        raised.emplace(std::move(err));
        request_stop();
      }
    };
  }
};

py::dict result_dict(const TrainResult& r, const TrainOptions& o) {
  py::dict d;
  d["status"] = r.status;
  d["steps_done"] = r.steps_done;
  d["last_loss"] = r.last_loss;
  d["last_val_loss"] = r.last_val_loss;
  d["reason"] = r.reason;
  d["out"] = o.out;
  return d;
}

// train(train_tokens=..., val_tokens=...): the arrays become the dataset
// folder `data` (default OUT.data, beside the run: the run folder itself
// holds only the run), written once and kept, so the run is the CLI's run
// of that folder: the same trainer, the same metrics, and resume=True
// finds the same data again.
struct TokenArrays {
  std::string dir;
  std::vector<int> train, val;
};

TokenArrays token_arrays(TrainRequest& request, const py::kwargs& options, const py::object& train_tokens,
                         const py::object& val_tokens) {
  check(!train_tokens.is_none(), "train: val_tokens needs train_tokens");
  TokenArrays a;
  a.train = ids_from(train_tokens, "train_tokens");
  if (!val_tokens.is_none()) a.val = ids_from(val_tokens, "val_tokens");
  check(val_tokens.is_none() || !a.val.empty(), "val_tokens: no tokens");
  if (options.contains("data")) {
    a.dir = path_arg(options["data"], "data");
  } else {
    check(options.contains("out"), "train: train_tokens needs out (the run folder)");
    const std::filesystem::path out = std::filesystem::absolute(path_arg(options["out"], "out")).lexically_normal();
    a.dir = (out.has_filename() ? out : out.parent_path()).string() + ".data";
    request.set("data", a.dir);
  }
  return a;
}

py::dict train_run(const py::object& progress, const py::kwargs& options) {
  check(progress.is_none() || PyCallable_Check(progress.ptr()) ||
            (py::isinstance<py::str>(progress) && progress.equal(py::str("stderr"))),
        "train: progress must be a callable, None or \"stderr\"");
  TrainRequest request;
  py::object train_tokens = py::none(), val_tokens = py::none();
  for (const auto& [k, v] : options) {
    const std::string name = str_arg(k, "train: a keyword");
    if (name == "train_tokens" || name == "val_tokens") {
      (name == "train_tokens" ? train_tokens : val_tokens) = py::reinterpret_borrow<py::object>(v);
      continue;
    }
    request.set(name, json_of(v, name.c_str()));
  }
  std::optional<TokenArrays> arrays;
  if (!train_tokens.is_none() || !val_tokens.is_none())
    arrays = token_arrays(request, options, train_tokens, val_tokens);
  const TrainOptions o = request.resolve([&](const std::string& note) {
    TrainEvent e;
    e.text = note;
    if (PyCallable_Check(progress.ptr()))
      progress(event_dict(e));
    else if (!progress.is_none())
      std::fprintf(stderr, "note: %s\n", note.c_str());
  });
  // Written once every option is known good (resolve checked them).
  if (arrays) without_gil([&] { write_token_dataset(arrays->dir, arrays->train, arrays->val); });
  Progress p{progress, o.log_every, std::nullopt};
  clear_stop_request();
  TrainResult r;
  {
    StopSignalScope scope;
    py::gil_scoped_release release;
    r = train(o, p.fn());
  }
  if (p.raised) {
    clear_stop_request();
    p.raised->restore();
    throw py::error_already_set();
  }
  raise_if_stopped();
  return result_dict(r, o);
}

py::object read_metrics(const py::handle& run, const py::object& pandas) {
  const bool want_pandas = pandas.is_none() || bool_arg(pandas, "read_metrics: pandas");
  py::object rows = from_json(nlohmann::json(read_run_metrics(path_arg(run, "read_metrics: run"))));
  if (want_pandas) {
    try {
      return py::module_::import("pandas").attr("DataFrame")(rows);
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_ImportError) || !pandas.is_none()) throw;
    }
  }
  return rows;
}

}  // namespace

void add_train(py::module_& m) {
  m.def("train", &train_run, py::kw_only(), py::arg("progress") = py::none(),
        "Trains as `gpt2lab train` does, its flags as keywords (data=..., out=..., n_layer=2, batch_size=8, "
        "steps=100, lr=1e-3, ...). progress: a callable given each event as a dict, \"stderr\" for the CLI's "
        "printout, or None. Returns how the run ended; Ctrl-C finishes the step, saves, and raises "
        "KeyboardInterrupt (resume=True continues)");
  m.def("read_metrics", &read_metrics, py::arg("run"), py::kw_only(), py::arg("pandas") = py::none(),
        "The rows of RUN/metrics.jsonl: a pandas DataFrame when pandas is importable (pandas=None) or asked "
        "for (True), else a list of dicts");
}

}  // namespace gpt2lab::python
