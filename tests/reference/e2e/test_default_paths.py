"""Default paths work outside the source tree: the data folder is
$GPT2LAB_DATA when set, else data/ of the working directory, never the
source tree the program was compiled from (a second checkout's or an
installed program once read GPT-2's tokenizer from, and prepared its
dataset into, the first tree's data/). The installed package (cmake
--install into a scratch prefix, as scripts/check_package.sh does) is run
from an unrelated folder with GPT2LAB_DATA and with relative paths; a
missing default names the path tried and the variable. Skips (77) without
an installed-able build or GPT-2's tokenizer files.
"""
import glob
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

BUILD = os.path.dirname(harness.BIN)
DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
GPT2 = os.path.join(DATA, "gpt2")
DOCS = {"a.txt": "The economy grew this year.\n", "b.txt": "We the people.\n", "c.txt": "A more perfect union.\n"}


def prerequisites():
    if not os.path.exists(os.path.join(BUILD, "cmake_install.cmake")) or not shutil.which("cmake"):
        return "no build tree to install (cmake_install.cmake) or no cmake"
    if not os.path.exists(os.path.join(GPT2, "encoder.json")):
        return "GPT-2's tokenizer files (data/gpt2) are missing"
    return None


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    why = prerequisites()
    if why:
        pytest.skip(why)
    p = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(p)], check=True, stdout=subprocess.DEVNULL)
    assert os.path.exists(p / "share" / "gpt2lab" / "data" / "gpt2" / "encoder.json")
    return p


def corpus(folder):
    os.makedirs(folder)
    for name, text in DOCS.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)


def env(data=None):
    e = {k: v for k, v in os.environ.items() if k != "GPT2LAB_DATA"}
    if data is not None:
        e["GPT2LAB_DATA"] = str(data)
    return e


def run(binary, *args, cwd, data=None):
    return subprocess.run([str(binary), *args], cwd=cwd, env=env(data), capture_output=True, text=True, timeout=600,
                          input="")


def test_defaults_shown_are_relative_or_the_variable(prefix, tmp_path):
    # (A byte search of the program for the source path proves nothing: GCC
    # builds short strings from immediates.) What it says it will use:
    for binary in (prefix / "bin" / "gpt2lab", harness.BIN):
        r = run(binary, "prepare", "--help", cwd=tmp_path)
        assert "(default: data/sotu_gpt2)" in r.stdout and "corpus, data/sotu)" in r.stdout, r.stdout
        assert harness.SOURCE not in r.stdout, r.stdout
        r = run(binary, "prepare", "--help", cwd=tmp_path, data="/srv/corpora")
        assert "(default: /srv/corpora/sotu_gpt2)" in r.stdout, r.stdout


def test_gpt2lab_data_from_an_unrelated_folder(prefix, tmp_path):
    mydata, elsewhere = tmp_path / "mydata", tmp_path / "elsewhere"
    corpus(mydata / "sotu")
    os.symlink(GPT2, mydata / "gpt2")
    elsewhere.mkdir()
    r = run(prefix / "bin" / "gpt2lab", "prepare", "--val-every", "2", cwd=elsewhere, data=mydata)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"prepared {mydata}/sotu_gpt2\n"), r.stdout
    assert os.path.exists(mydata / "sotu_gpt2" / "train.bin") and os.listdir(elsewhere) == []


def test_relative_paths_from_the_working_directory(prefix, tmp_path):
    work = tmp_path / "work"
    corpus(work / "data" / "sotu")  # no data/gpt2 here: the installed copy serves
    r = run(prefix / "bin" / "gpt2lab", "prepare", "--val-every", "2", cwd=work)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("prepared data/sotu_gpt2\n"), r.stdout
    assert os.path.exists(work / "data" / "sotu_gpt2" / "val.bin")
    r = run(prefix / "bin" / "gpt2lab", "init", "--out", "ckpt", "--n-layer", "1", "--n-head", "2", "--n-embd", "32",
            "--block-size", "32", cwd=work)
    assert r.returncode == 0, r.stderr
    r = run(prefix / "bin" / "gpt2lab", "eval", "--model", "ckpt", "--batch-size", "1", "--seq-len", "4",
            "--batches", "1", cwd=work)
    assert r.returncode == 0 and "data/sotu_gpt2" in r.stdout, r.stdout + r.stderr


def test_missing_defaults_name_the_path_and_the_variable(prefix, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run(prefix / "bin" / "gpt2lab", "prepare", cwd=empty)
    assert r.returncode != 0
    assert "'data/sotu' does not exist" in r.stderr and "GPT2LAB_DATA" in r.stderr, r.stderr
    r = run(prefix / "bin" / "gpt2lab", "prepare", cwd=empty, data=tmp_path / "nowhere")
    assert f"'{tmp_path}/nowhere/sotu' does not exist (from $GPT2LAB_DATA)" in r.stderr, r.stderr
    # The build tree's program ships no tokenizer, and the source tree's is
    # not looked at: the message names the places tried and the variable.
    r = run(harness.BIN, "tokenize", cwd=empty)
    assert r.returncode != 0
    assert "'data/gpt2' (data/ of the working directory; set GPT2LAB_DATA" in r.stderr, r.stderr
    assert os.path.join(harness.SOURCE, "data") not in r.stderr, r.stderr


def test_installed_python_module(prefix, tmp_path):
    so = glob.glob(str(prefix / "**" / "_gpt2lab.*.so"), recursive=True)
    if not so:
        pytest.skip("the Python module was not built")
    site = os.path.dirname(os.path.dirname(so[0]))
    code = ("import gpt2lab\n"
            "try:\n    gpt2lab.Tokenizer.load('gpt2'); print('loaded')\n"
            "except gpt2lab.Error as e:\n    print(e)\n")
    e = env(tmp_path / "pydata")
    e["PYTHONPATH"] = site
    os.makedirs(tmp_path / "pydata")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=e, capture_output=True, text=True)
    assert f"'{tmp_path}/pydata/gpt2'" in r.stdout and "GPT2LAB_DATA" in r.stdout, r.stdout + r.stderr
    os.symlink(GPT2, tmp_path / "pydata" / "gpt2")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=e, capture_output=True, text=True)
    assert r.stdout == "loaded\n", r.stdout + r.stderr


if __name__ == "__main__":
    why = prerequisites()
    if why:
        harness.skip(why)
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
