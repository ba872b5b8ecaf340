"""Every example of the README and of docs/ runs as written, every relative link in them leads to
a file and an anchor that exist, and the README stays one page.

What runs, block by block (fenced code in README.md and docs/**/*.md):

- ```python: executed in a fresh interpreter in a fresh empty folder (as pasted: it imports what
  it uses), so every path in it must resolve from any folder (``robokin_ros.robots.path("panda.urdf")``).
- ```bash, ```sh, ```shell, ```console (its ``$ `` lines): run by bash (``set -eo pipefail``) in
  a folder that mirrors the repository root (a link to each of its entries: ``robokin_ros/robots/
  ur5e.urdf`` resolves as in a clone, and the files a block writes stay in the folder), with this
  checkout first on ``PYTHONPATH``, a private ``HOME`` and a random ``ROS_DOMAIN_ID`` (1-101).
  The blocks of one page run in order in one folder, like the reader who follows the page; the
  folder also holds the bundled robots under their own names (``panda.urdf``, ``ur5e.urdf``, ...)
  and the Panda as ``robot.urdf`` / ``robot.srdf``, the pages' name for "your robot".
- every other fence names its language (``text``, ``yaml``, a MyST directive ``{...}``) and does
  not run; a fence without a language fails ``test_every_fence_names_its_language``.

HTML comments on the lines right above a fence change how it runs (they do not show on GitHub or
in the site):

- ``<!-- runs-in: test/node/test_readme_commands.py -->``: the block needs what this process
  cannot give (a live ROS graph, the whole suite) and that test file runs it; it must exist and
  read the page (name it). Skipped here, with the file named in the reason. The one marker a
  Python block may carry (an rclpy client of a running node).

What a Python block claims is checked: the comment beside (or right below) each ``print`` is its
output (:func:`output_matches`: the same text, numbers written ``X±T`` within ``T``), and a
``# (1000, n_q)`` comment on an assignment the assigned array's shape.
- ``<!-- needs: ros2 colcon -->``: run only where every command named is on ``PATH`` (a ROS 2
  install); skipped with that reason elsewhere.
- ``<!-- runs-until: REGEX -->``: each command of the block is a server: it runs until its output
  matches REGEX, then gets SIGINT (Ctrl-C) and must stop cleanly: exit 0 (or 130, the shell's
  code for a Ctrl-C) within a minute, without a traceback.
- ``<!-- test-args: --resolution 0.3 -->``: these arguments are appended to each command of the
  block (a smaller run of the same command; the text shows the real size).
- ``<!-- synopsis -->``: usage lines (placeholders, ``[optional]``, ``a|b``), not commands: each
  line's program and subcommand must answer ``--help``, and every option the line names must be
  in that help (``test_the_synopsis_names_real_options``).
"""

from __future__ import annotations

import ast
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from robokin_ros import robots
from robokin_ros.kernels.disk_cache import cache_dir

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent> {0,3})```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*(runs-in|needs|runs-until|test-args|synopsis)(?::\s*(.*?))?\s*-->")
PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell", "console"}
#: Seconds one shell block (or one server of a runs-until block) may take: a bound on a hung
#: command, never a pass/fail criterion.
BLOCK_TIMEOUT = 900


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with the markers on the lines right above each."""
    text = page.read_text()
    out = []
    for match in FENCE.finditer(text):
        line = text[:match.start()].count("\n") + 1
        above = text[:match.start()].splitlines()
        markers = {}
        while above and MARKER.fullmatch(above[-1].strip()):
            key, value = MARKER.fullmatch(above.pop().strip()).groups()
            markers[key] = value or ""
        lang = match.group("info").strip().split(" ")[0].lower()
        out.append(Block(page, line, lang, match.group("body"), markers))
    return out


ALL = [block for page in PAGES for block in blocks(page)]


def _python_params():
    for block in ALL:
        if block.lang in PYTHON:
            marks = () if block.page.name == "README.md" else (pytest.mark.slow,)   # docs/: make test only
            yield pytest.param(block, id=block.name, marks=marks)


#: What runs a Python block in a fresh interpreter (as a reader pastes it): statement by
#: statement, each one's printed lines and, for an assignment to one name, the value's shape and
#: the sizes of the block's ``model`` then, written as JSON to the file named by argv[2].
RUNNER = """
import ast, contextlib, io, json, sys
body = open(sys.argv[1]).read()
namespace, report = {"__name__": "__example__"}, []
for statement in ast.parse(body).body:
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(ast.Module(body=[statement], type_ignores=[]), sys.argv[1], "exec"), namespace)
    entry = {"line": statement.lineno, "printed": printed.getvalue().splitlines()}
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        import numpy
        entry["shape"] = list(numpy.shape(namespace[statement.targets[0].id]))
        model = namespace.get("model")
        if model is not None:
            entry["sizes"] = {"n_q": model.n_q, "n_v": model.n_v, "n_links": len(model.link_names)}
    report.append(entry)
json.dump(report, open(sys.argv[2], "w"))
"""


@pytest.mark.parametrize("block", list(_python_params()))
def test_the_python_example_runs_from_any_folder_and_prints_what_it_says(block, tmp_path):
    """Each block runs in a fresh interpreter in an empty folder, statement by statement; what each
    ``print`` writes is the comment the page shows for it (:func:`printed_claims`, compared by
    :func:`output_matches`), and an assignment whose comment starts with a shape, ``x = ...  #
    (1000, n_q): ...``, has that shape (:func:`shape_claims`)."""
    if block.markers.get("runs-in"):   # a client of a live node (test_runs_in_names_a_test_that_reads_the_page)
        pytest.skip(f"runs in {block.markers['runs-in']}")
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "block.py").write_text(block.body)
    (tmp_path / "runner.py").write_text(RUNNER)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.setdefault("ROBOKIN_CACHE_DIR", cache_dir())
    env["MPLBACKEND"] = "Agg"
    result = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "block.py"),
                             str(tmp_path / "report.json")], cwd=work, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=BLOCK_TIMEOUT)
    assert result.returncode == 0, f"{block.name} failed in a fresh interpreter:\n{result.stdout[-3000:]}\n" \
                                   f"{result.stderr[-3000:]}"
    report = {entry["line"]: entry for entry in json.loads((tmp_path / "report.json").read_text())}
    lines = block.body.splitlines()
    problems = []
    for statement in ast.parse(block.body).body:
        entry = report[statement.lineno]
        claims, output = printed_claims(statement, lines), entry["printed"]
        if len(output) != len(claims):
            problems.append(f"line {statement.lineno}: printed {output}, the page shows {claims}")
        problems += [f"line {statement.lineno}: printed {got!r}, the page shows {want!r}"
                     for got, want in zip(output, claims) if not output_matches(got, want)]
        for name, shape in shape_claims(statement, lines, entry.get("sizes")):
            if tuple(entry["shape"]) != shape:
                problems.append(f"line {statement.lineno}: {name} has shape {tuple(entry['shape'])}, "
                                f"the page shows {shape}")
    assert problems == [], f"{block.name}: " + "; ".join(problems)


def trailing_comment(line: str) -> str:
    """The text of a Python line's ``# comment`` (tokenised: a ``#`` in a string is not one), or ''."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            if token.type == tokenize.COMMENT:
                return token.string[1:].strip()
    except (tokenize.TokenError, IndentationError):   # (a line of a longer statement)
        pass
    return ""


def printed_claims(statement: ast.stmt, lines: list[str]) -> list[str]:
    """What the page says each ``print`` call in ``statement`` writes, in order: the comment at the
    end of the call's last line, else the comment line right below the statement."""
    claims = []
    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            claim = trailing_comment(lines[node.end_lineno - 1])
            if not claim and node.end_lineno < len(lines) and lines[node.end_lineno].lstrip().startswith("#"):
                claim = lines[node.end_lineno].lstrip()[1:].strip()
            claims.append((node.lineno, claim))
    return [claim for _, claim in sorted(claims)]


#: A number with a stated tolerance in a claimed output: ``0.307±0.001``.
TOLERANT = re.compile(r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)±(\d+(?:\.\d+)?(?:e-?\d+)?)")
NUMBER = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def output_matches(printed: str, claim: str) -> bool:
    """Whether a printed line is what the page claims: the same text (runs of blanks alike),
    except that a claimed ``X±T`` matches any number within ``T`` of ``X``."""
    parts, pattern = TOLERANT.split(claim.strip()), ""
    for i, part in enumerate(parts):
        if i % 3 == 0:
            pattern += r"\s+".join(re.escape(word) for word in part.split(" ")) if part else ""
        elif i % 3 == 1:
            pattern += NUMBER
    match = re.fullmatch(pattern, " ".join(printed.split()))
    if not match:
        return False
    stated = [(float(parts[i]), float(parts[i + 1])) for i in range(1, len(parts), 3)]
    return all(abs(float(got) - value) <= tolerance for got, (value, tolerance) in zip(match.groups(), stated))


def shape_claims(statement: ast.stmt, lines: list[str], sizes: dict | None) -> list[tuple[str, tuple]]:
    """``(name, shape)`` when ``statement`` assigns one name and its line's comment starts with a
    shape, ``(1000, n_q)``: whole numbers, or ``n_q``, ``n_v``, ``n_links`` of the block's ``model``
    (``sizes``; None: the block has none)."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return []
    match = re.match(r"\(([\w, ]*)\)", trailing_comment(lines[statement.end_lineno - 1]))
    if not match or sizes is None:
        return []
    words = [word.strip() for word in match.group(1).split(",") if word.strip()]
    if not all(word.isdigit() or word in sizes for word in words):
        return []
    return [(statement.targets[0].id, tuple(int(word) if word.isdigit() else sizes[word] for word in words))]


def test_claimed_outputs_compare_as_stated():
    assert output_matches("1.0 (10000, 8)", "1.0 (10000, 8)")
    assert not output_matches("0.9999 (10000, 8)", "1.0 (10000, 8)")
    assert output_matches("x 0.3071  y", "x 0.307±0.001 y") and not output_matches("x 0.309 y", "x 0.307±0.001 y")
    assert not output_matches("True", "True True")
    body = 'import numpy as np\nprint(np.zeros(2).shape)   # (2,)\nprint("a")\n# a\n'
    tree = ast.parse(body)
    assert [printed_claims(s, body.splitlines()) for s in tree.body] == [[], ["(2,)"], ["a"]]


# ---------------------------------------------------------------------------------------- shell


def commands(block: Block) -> list[str]:
    """The block's commands: ``$ `` lines of a console block, else every line that is not blank or
    a comment, with backslash continuations joined."""
    lines = block.body.splitlines()
    if block.lang == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    out, pending = [], ""
    for line in lines:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    return out


def without_comment(command: str) -> tuple[str, str]:
    """``command`` split before a trailing ``# comment`` (a ``#`` after a blank, outside quotes)."""
    quote = None
    for i, char in enumerate(command):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and i and command[i - 1] in " \t":
            return command[:i].rstrip(), command[i:]
    return command, ""


def _missing(needs: str) -> list[str]:
    """The commands (or absolute paths) of a ``needs:`` marker this machine lacks."""
    return [tool for tool in needs.split()
            if not (os.path.exists(tool) if tool.startswith("/") else shutil.which(tool))]


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory):
    """One folder per page that mirrors the repository root, and the environment to run in."""
    folders = {}
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ)
    env.update({
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p]),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        # the caches of this machine, not a cold one under the private HOME
        "ROBOKIN_CACHE_DIR": cache_dir(),
        "PIP_CACHE_DIR": env.get("PIP_CACHE_DIR") or str(ROOT / ".build" / "pip-cache"),
        "ROS_DOMAIN_ID": str(random.randint(1, 101)),
        "MPLBACKEND": "Agg",
    })

    def folder(page: Path) -> Path:
        if page not in folders:
            work = tmp_path_factory.mktemp(page.stem)
            for entry in ROOT.iterdir():
                if entry.name != ".git":
                    (work / entry.name).symlink_to(entry)
            for name in robots.names():
                shutil.copy(robots.path(name), work / name)
            shutil.copy(robots.path("panda.urdf"), work / "robot.urdf")
            shutil.copy(robots.path("panda.srdf"), work / "robot.srdf")
            folders[page] = work
        return folders[page]

    return folder, env


def run_server(command: str, until: str, cwd: Path, env: dict, log: Path) -> None:
    """Run ``command`` until its output matches ``until``, then SIGINT it: it must exit 0."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", "exec " + command], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + BLOCK_TIMEOUT
        while not re.search(until, log.read_text(errors="replace")):
            assert proc.poll() is None, f"{command!r} exited {proc.returncode} before printing /{until}/:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"{command!r} printed no /{until}/:\n{log.read_text()}"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        assert code in (0, 128 + signal.SIGINT) and "Traceback" not in log.read_text(), \
            f"{command!r} on Ctrl-C: exit {code}\n{log.read_text()}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _shell_params():
    for block in ALL:
        if block.lang in SHELL:
            yield pytest.param(block, id=block.name, marks=(pytest.mark.slow,))


@pytest.mark.parametrize("block", list(_shell_params()))
def test_the_shell_example_runs(block, mirrors, tmp_path):
    if "synopsis" in block.markers:
        pytest.skip("a synopsis: test_the_synopsis_names_real_options checks it")
    if "runs-in" in block.markers:
        if block.markers["runs-in"] == "test/core/test_doc_examples.py":
            pytest.skip("runs in test_the_readme_make_block_runs_as_the_makefile_says")
        pytest.skip(f"runs in {block.markers['runs-in']} (test_runs_in_names_a_test_that_reads_the_page checks it)")
    if "needs" in block.markers and _missing(block.markers["needs"]):
        pytest.skip(f"needs {', '.join(_missing(block.markers['needs']))} (a ROS 2 install)")
    folder, env = mirrors
    cwd = folder(block.page)
    extra = block.markers.get("test-args", "")
    lines, json_outputs = [], []
    for command in commands(block):
        text, comment = without_comment(command)
        line = f"{text} {extra}".rstrip()
        if re.search(r"\bJSON\b", comment) and "runs-until" not in block.markers:   # says it prints JSON: it must
            json_outputs.append((command, tmp_path / f"output{len(json_outputs)}.json"))
            line = f"{line} | tee {json_outputs[-1][1]}"
        lines.append(line)
    assert lines, f"{block.name}: a shell block without a command"
    if "runs-until" in block.markers:
        for i, command in enumerate(lines):
            run_server(command, block.markers["runs-until"], cwd, env, tmp_path / f"server{i}.log")
        return
    script = "set -eo pipefail\n" + "\n".join(lines) + "\n"
    result = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=BLOCK_TIMEOUT)
    assert result.returncode == 0, f"{block.name} exited {result.returncode}:\n{script}\n{result.stdout[-4000:]}\n" \
                                   f"{result.stderr[-4000:]}"
    for command, output in json_outputs:   # the comment says JSON
        try:
            json.loads(output.read_text())
        except ValueError as e:
            pytest.fail(f"{block.name}: {command!r} says it prints JSON, but printed {output.read_text()[:300]!r} ({e})")


def _synopses():
    for block in ALL:
        if "synopsis" in block.markers:
            yield pytest.param(block, id=block.name, marks=(pytest.mark.slow,))


@pytest.mark.parametrize("block", list(_synopses()))
def test_the_synopsis_names_real_options(block, mirrors):
    """Each usage line's ``program [subcommand] --help`` works, and names every option of the line."""
    folder, env = mirrors
    helps, missing = {}, []
    for command in commands(block):
        words = without_comment(command)[0].split()
        head = tuple(words[:2]) if len(words) > 1 and not words[1].startswith("-") else tuple(words[:1])
        if shutil.which(head[0], path=env["PATH"]) is None:
            pytest.skip(f"needs {head[0]}")
        if head not in helps:
            result = subprocess.run([*head, "--help"], cwd=folder(block.page), env=env, capture_output=True,
                                    text=True, stdin=subprocess.DEVNULL, timeout=BLOCK_TIMEOUT)
            assert result.returncode == 0, f"{' '.join(head)} --help:\n{result.stdout}{result.stderr}"
            helps[head] = result.stdout
        options = re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", " ".join(words[len(head):]))
        missing += [f"{' '.join(head)} {option}" for option in options if option not in helps[head]]
    assert missing == []


MAKE_BLOCK = "test/core/test_doc_examples.py"


def make_recipe(target: str) -> list[str]:
    """The recipe lines of a Makefile target, ``$(RUN)`` spelt out."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)*)", text, re.M)
    assert match, f"the Makefile has no target {target!r}"
    return [line.strip().lstrip("@").replace("$(RUN)", "tools/run_in_env.sh") for line in match.group(1).splitlines()]


@pytest.mark.slow
def test_the_readme_make_block_runs_as_the_makefile_says(mirrors, tmp_path):
    """The README's ``make demo`` / ``make test``: ``make test`` is what CI runs (.ci/run), so it
    is not run again from inside itself; ``make demo`` runs its recipe (the bootstrap, ``make
    venv``, is what ``make test`` has just done) and must exit 0."""
    block = next(b for b in blocks(ROOT / "README.md") if b.markers.get("runs-in") == MAKE_BLOCK)
    targets = [command.split()[1] for command in commands(block)]
    assert targets == ["demo", "test"], targets
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("make test")
    assert "python -m pytest test" in " ".join(make_recipe("test"))
    assert re.search(r"^test:.*\bdocs\b", (ROOT / "Makefile").read_text(), re.M), "make test builds the docs first"
    folder, env = mirrors
    for line in make_recipe("demo"):
        result = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, timeout=BLOCK_TIMEOUT)
        assert result.returncode == 0, f"{line}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"


# -------------------------------------------------------------------------------- the markers


def test_runs_in_names_a_test_that_reads_the_page():
    """A block skipped here names the file that runs it: one that exists and reads the page."""
    marked = [block for block in ALL if "runs-in" in block.markers]
    problems = []
    for block in marked:
        target = ROOT / block.markers["runs-in"]
        if not target.is_file():
            problems.append(f"{block.name}: runs-in {block.markers['runs-in']}: no such file")
        elif block.page.name not in target.read_text():
            problems.append(f"{block.name}: {block.markers['runs-in']} does not read {block.page.name}")
    assert problems == []


def test_markers_stand_above_code_blocks_only():
    """A marker that is not right above a fence (a blank line between, a typo in its name) would
    silently mark nothing: refuse it."""
    used = sum(len(block.markers) for block in ALL)
    written = sum(len(MARKER.findall(page.read_text())) for page in PAGES)
    unknown = [(page.name, name) for page in PAGES for name in re.findall(r"<!--\s*([\w-]+)\s*(?::|-->)", page.read_text())
               if name not in ("runs-in", "needs", "runs-until", "test-args", "synopsis")]
    assert (used, unknown) == (written, [])


def test_every_fence_names_its_language():
    """A fence without a language would be neither run nor said not to run."""
    assert [block.name for block in ALL if not block.lang] == []


def test_shell_markers_only_on_shell_blocks():
    """Python blocks take ``runs-in`` only (a client of a live node, run by the test it names)."""
    assert [block.name for block in ALL if block.markers and block.lang not in SHELL
            and not (block.lang in PYTHON and set(block.markers) == {"runs-in"})] == []


def test_comment_split_keeps_quoted_hashes():
    assert without_comment("robokin fk a.urdf --q 'x=#1'   # JSON") == ("robokin fk a.urdf --q 'x=#1'", "# JSON")
    assert without_comment("echo a#b") == ("echo a#b", "")


def test_continuations_join_into_one_command():
    block = Block(ROOT / "README.md", 1, "bash", "# a comment\nrobokin reach x \\\n    --out m.npz   # c\n\nls\n")
    assert commands(block) == ["robokin reach x      --out m.npz   # c", "ls"]
    console = Block(ROOT / "README.md", 1, "console", "$ robokin --version\nrobokin 0.1.0\n")
    assert commands(console) == ["robokin --version"]


# --------------------------------------------------------------------------- bundled robots


def test_bundled_robot_paths_resolve_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in robots.names():
        path = robots.path(name)
        assert path.is_absolute() and path.is_file() and path.name == name
    assert {"panda.urdf", "panda.srdf", "ur5e.urdf"} <= set(robots.names())


def test_an_unknown_bundled_robot_is_refused_naming_those_there_are():
    with pytest.raises(FileNotFoundError, match=r"'pandas\.urdf'.*bundled: .*panda\.urdf"):
        robots.path("pandas.urdf")


# ------------------------------------------------------------------------------------ the README


def test_the_readme_has_examples_and_fits_on_a_page():
    text = (ROOT / "README.md").read_text()
    langs = [block.lang for block in blocks(ROOT / "README.md")]
    assert "python" in langs and "bash" in langs
    assert len(text.splitlines()) <= 250


def test_the_readme_says_what_a_new_user_needs():
    """Issue 30's list: install (make, pip, colcon), the node's three services called from the
    shell, the CLI, the supported robots and interfaces, a dated benchmark table."""
    text = (ROOT / "README.md").read_text()
    for needed in ("make demo", "make test", "pip install", "colcon build", "ros2 launch",
                   "ros2 service call /compute_ik", "ros2 service call /compute_fk",
                   "ros2 service call /check_state_validity", "robokin check", "robokin ik", "docs/benchmarks.md"):
        assert needed in text, needed
    assert re.search(r"20\d\d-\d\d-\d\d", text), "the benchmark table carries its date"


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings."""
    return {re.sub(r"[^\w\- ]", "", m.strip().lower()).replace(" ", "-")
            for m in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file.read_text()):
            broken.append(target)
    assert broken == []
