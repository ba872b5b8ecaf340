"""``kin.launch.py``'s argument checks (robokin_ros.node.launch_arguments), run before the launch
starts anything. Before them, ``use_rviz`` defaulted to true, so on a machine without rviz2 the
launch failed after ``kin_node`` had started (left orphaned); ``use_rviz:=maybe`` did the same; a
mistyped ``params_file`` only warned; unknown argument names were ignored."""

import importlib.util
import pathlib
import re
import sys

import pytest
import yaml

from robokin_ros.node.launch_arguments import ARGUMENTS, LaunchArgumentError, check_launch_arguments, unknown_arguments

ROOT = pathlib.Path(__file__).resolve().parents[2]
PANDA = ROOT / 'robokin_ros' / 'robots' / 'panda.urdf'
FIXTURES = ROOT / 'test' / 'fixtures'
CORPUS = ROOT.parent / 'shared' / 'urdf-corpus'
HAS_XACRO = importlib.util.find_spec('xacro') is not None
#: A group that names a joint and then itself, on the bundled Panda (review F1).
CYCLIC_SRDF = ('<robot name="panda"><group name="arm"><joint name="panda_joint1"/><group name="arm"/></group>'
               '</robot>')


@pytest.fixture
def params_file(tmp_path):
    path = tmp_path / 'kin.yaml'
    path.write_text(yaml.safe_dump({'robokin': {'ros__parameters': {'publish_frequency': 10.0}}}))
    return str(path)


def values(params_file, **overrides):
    base = {'description_file': str(PANDA), 'semantic_file': '', 'params_file': params_file,
            'frame_prefix': '', 'use_rviz': 'auto', 'use_sim_time': 'false', 'use_web_view': 'false'}
    assert set(base) == set(ARGUMENTS)
    base.update(overrides)
    return base


def problems(vals, command_line=(), rviz=False):
    with pytest.raises(LaunchArgumentError) as info:
        check_launch_arguments(vals, list(command_line), rviz_available=lambda: rviz)
    assert str(info.value).startswith('invalid launch arguments, nothing started')
    return info.value.problems


def test_defaults_start_the_node_and_rviz_only_when_installed(params_file):
    without = check_launch_arguments(values(params_file), rviz_available=lambda: False)
    assert not without.use_rviz
    assert any('rviz2 is not installed' in note for note in without.notes)
    assert without.root_link == 'panda_link0'
    assert without.robot_description == PANDA.read_text()
    with_rviz = check_launch_arguments(values(params_file), rviz_available=lambda: True)
    assert with_rviz.use_rviz and not with_rviz.notes


def test_shipped_params_file_is_accepted():
    plan = check_launch_arguments(values(str(ROOT / 'config' / 'kin.yaml')), rviz_available=lambda: False)
    assert plan.params_file.endswith('kin.yaml')


@pytest.mark.parametrize('word, expected', [('true', True), ('True', True), ('1', True),
                                            ('false', False), ('FALSE', False), ('0', False)])
def test_booleans_as_launch_reads_them(params_file, word, expected):
    plan = check_launch_arguments(values(params_file, use_rviz=word, use_sim_time=word),
                                  rviz_available=lambda: True)
    assert plan.use_rviz is expected and plan.use_sim_time is expected


def test_use_rviz_maybe_is_an_error(params_file):
    assert problems(values(params_file, use_rviz='maybe')) == (
        "use_rviz:='maybe' is not a boolean (one of true, 1, false, 0, auto)",)


def test_use_rviz_true_without_rviz2_is_an_error(params_file):
    (problem,) = problems(values(params_file, use_rviz='true'), rviz=False)
    assert problem.startswith('use_rviz:=true but rviz2 is not installed')


def test_use_sim_time_must_be_a_boolean(params_file):
    assert problems(values(params_file, use_sim_time='yes')) == (
        "use_sim_time:='yes' is not a boolean (one of true, 1, false, 0)",)


def test_unknown_arguments_are_listed_with_a_suggestion(params_file):
    found = problems(values(params_file), ['descripton_file:=x.urdf', 'use_rviz:=false', 'colour:=red'])
    assert len(found) == 2
    assert found[0].startswith("unknown launch argument 'descripton_file' (did you mean 'description_file'?)")
    assert found[1].startswith("unknown launch argument 'colour'; known: description_file, ")


def test_known_arguments_are_not_flagged():
    assert unknown_arguments([f'{name}:=x' for name in ARGUMENTS]) == []


def test_missing_description_file(params_file, tmp_path):
    path = tmp_path / 'nope.urdf'
    (problem,) = problems(values(params_file, description_file=str(path)))
    assert problem == f"description_file: cannot read '{path}': No such file or directory"


@pytest.mark.parametrize('argument', ['description_file', 'semantic_file'])
def test_files_are_read_with_the_size_cap(params_file, monkeypatch, argument):
    """The core's reader: /dev/zero stops at the cap instead of exhausting memory."""
    cap = PANDA.stat().st_size   # the bundled Panda still passes
    monkeypatch.setenv('ROBOKIN_MAX_DESCRIPTION_BYTES', str(cap))
    (problem,) = problems(values(params_file, **{argument: '/dev/zero'}))
    assert problem == (f"{argument}: cannot read '/dev/zero': larger than the limit of {cap} bytes "
                       '(ROBOKIN_MAX_DESCRIPTION_BYTES)')


def test_bad_urdf_is_reported_with_the_loader_message(params_file):
    (problem,) = problems(values(params_file, description_file=str(FIXTURES / 'bad_two_roots.urdf')))
    assert problem.startswith("description_file '") and 'root' in problem


def test_xacro_file_without_xacro_names_the_package(params_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'xacro', None)   # import xacro fails, as on a machine without it
    path = tmp_path / 'robot.urdf.xacro'
    path.write_text(PANDA.read_text())
    (problem,) = problems(values(params_file, description_file=str(path)))
    assert problem == (f"description_file: '{path}' is a .xacro file, but xacro is not installed "
                       '(pip install xacro, or the ROS package xacro)')


@pytest.mark.skipif(not HAS_XACRO, reason='xacro is not installed here')
def test_xacro_file_is_expanded(params_file, tmp_path):
    path = tmp_path / 'robot.urdf.xacro'
    path.write_text(PANDA.read_text().replace('<robot ', '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" ', 1))
    plan = check_launch_arguments(values(params_file, description_file=str(path)), rviz_available=lambda: False)
    assert plan.root_link == 'panda_link0'


def test_params_file_missing(tmp_path):
    path = str(tmp_path / 'kin.yml')
    assert problems(values(path)) == (f"params_file '{path}': no such file",)


def test_params_file_not_yaml(tmp_path):
    path = tmp_path / 'kin.yaml'
    path.write_text('robokin: {ros__parameters: [\n')
    (problem,) = problems(values(str(path)))
    assert problem.startswith(f"params_file '{path}': not readable as YAML")


@pytest.mark.parametrize('content, message', [
    ({'robokinn': {'ros__parameters': {}}}, "no entry for node 'robokin' (top-level keys: robokinn;"),
    ([1, 2], 'expected a mapping of node names to {ros__parameters: ...}, got list'),
    ({'robokin': {'parameters': {}}}, "'robokin' has no 'ros__parameters' mapping"),
])
def test_params_file_without_parameters_for_the_node(tmp_path, content, message):
    path = tmp_path / 'kin.yaml'
    path.write_text(yaml.safe_dump(content))
    (problem,) = problems(values(str(path)))
    assert message in problem


@pytest.mark.parametrize('key', ['robokin', '/robokin', '/**', '/**/robokin', '/*'])
def test_params_file_keys_that_reach_the_node(tmp_path, key):
    path = tmp_path / 'kin.yaml'
    path.write_text(yaml.safe_dump({key: {'ros__parameters': {'publish_frequency': 5.0}}}))
    assert check_launch_arguments(values(str(path)), rviz_available=lambda: False).params_file == str(path)


def test_semantic_file_checks(params_file, tmp_path):
    good = tmp_path / 'panda.srdf'
    good.write_text('<robot name="panda"><group name="arm"><chain base_link="panda_link0" '
                    'tip_link="panda_hand_tcp"/></group></robot>')
    plan = check_launch_arguments(values(params_file, semantic_file=str(good)), rviz_available=lambda: False)
    assert plan.semantic_file == str(good)
    wrong_root = tmp_path / 'wrong.srdf'
    wrong_root.write_text('<robt name="panda"/>')
    broken = tmp_path / 'broken.srdf'
    broken.write_text('<robot name="panda">')
    assert problems(values(params_file, semantic_file=str(wrong_root))) == (
        f"semantic_file '{wrong_root}': invalid SRDF: the root element is <robt>, expected <robot>",)
    assert problems(values(params_file, semantic_file=str(broken)))[0].startswith(
        f"semantic_file '{broken}': invalid SRDF: malformed XML at line 1")
    missing = tmp_path / 'none.srdf'
    assert problems(values(params_file, semantic_file=str(missing))) == (
        f"semantic_file: cannot read '{missing}': No such file or directory",)


ENTITY_SRDF = '<!DOCTYPE r [<!ENTITY a "aaaa">]><robot name="panda">&a;</robot>'


@pytest.mark.parametrize('description', ['panda', 'broken'])
def test_semantic_file_is_parsed_hardened(params_file, tmp_path, description):
    """Entities are refused, whether the SRDF is read against the robot or (its URDF broken) alone."""
    srdf = tmp_path / 'entity.srdf'
    srdf.write_text(ENTITY_SRDF)
    urdf = PANDA if description == 'panda' else FIXTURES / 'bad_two_roots.urdf'
    found = problems(values(params_file, description_file=str(urdf), semantic_file=str(srdf)))
    assert found[-1].startswith(f"semantic_file '{srdf}': invalid SRDF: a <!DOCTYPE> or entity declaration is "
                                'not allowed'), found
    assert len(found) == (1 if description == 'panda' else 2)


def test_semantic_file_that_breaks_the_srdf_parser_is_listed_not_raised(params_file, tmp_path):
    """A group that names a joint and itself made parse_srdf recurse without end (review F1). Either
    the parser reports the cycle (the SRDF is accepted with a warning) or the launch lists it."""
    srdf = tmp_path / 'cycle.srdf'
    srdf.write_text(CYCLIC_SRDF)
    try:
        plan = check_launch_arguments(values(params_file, semantic_file=str(srdf)), rviz_available=lambda: False)
    except LaunchArgumentError as e:
        assert len(e.problems) == 1 and e.problems[0].startswith(f"semantic_file '{srdf}': "), e.problems
    else:
        assert plan.semantic_file == str(srdf)


def test_every_problem_is_listed_at_once(tmp_path):
    found = problems(values(str(tmp_path / 'none.yaml'), description_file=str(tmp_path / 'none.urdf'),
                            use_rviz='maybe', use_sim_time='perhaps'), ['foo:=1'])
    assert [re.match(r'\w+', p).group() for p in found] == [
        'unknown', 'description_file', 'params_file', 'use_sim_time', 'use_rviz']


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f'URDF corpus not found at {CORPUS}')
@pytest.mark.parametrize('name', ['ur5e_ros1', 'fetch', 'baxter', 'abb_irb6700'])
def test_corpus_robots_pass_with_only_description_file(name):
    path = CORPUS / f'{name}.urdf'
    if not path.is_file():
        pytest.skip(f'{path} not in the corpus')
    plan = check_launch_arguments(values(str(ROOT / 'config' / 'kin.yaml'), description_file=str(path)),
                                  rviz_available=lambda: False)
    assert plan.root_link


def test_package_declares_what_the_launch_file_runs():
    """xacro for .xacro descriptions; rviz2 deliberately not (use_rviz:=auto starts it when present)."""
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.parse(ROOT / 'package.xml').getroot()
    exec_depends = {e.text for e in root.iter('exec_depend')}
    assert {'xacro', 'launch', 'launch_ros', 'ament_index_python', 'python3-yaml'} <= exec_depends
    assert 'rviz2' not in exec_depends


@pytest.mark.parametrize('special', ['/dev/zero', 'fifo', 'directory'])
def test_the_params_file_is_read_with_the_core_reader(params_file, tmp_path, special):
    """Issue 24, case 3: the params file was read whole with open(); /dev/zero exhausted memory
    and a FIFO named as params_file blocked the launch. Now one capped reader for every path."""
    import os
    path = {'/dev/zero': '/dev/zero', 'fifo': str(tmp_path / 'pipe.yaml'), 'directory': str(tmp_path)}[special]
    if special == 'fifo':
        os.mkfifo(path)
    (problem,) = problems(values(path))
    assert problem.startswith(f"params_file '{path}': cannot read it: ")


# ---------------------------------------------------------------------------- the docs' table
def launch_file_arguments():
    """Name -> default of every argument launch/kin.launch.py declares: the names its
    ``DeclareLaunchArgument`` comprehension runs over (``ARGUMENTS``) and literal declarations,
    defaults from its ``DEFAULTS`` dictionary (where a literal)."""
    import ast

    tree = ast.parse((ROOT / 'launch' / 'kin.launch.py').read_text())
    names, defaults = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'DeclareLaunchArgument' \
                and node.args and isinstance(node.args[0], ast.Constant):
            names.add(node.args[0].value)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and \
                getattr(node.elt.func, 'id', '') == 'DeclareLaunchArgument' and \
                'ARGUMENTS' in ast.unparse(node.generators[0].iter):
            names |= set(ARGUMENTS)
        if isinstance(node, ast.Assign) and [getattr(t, 'id', '') for t in node.targets] == ['DEFAULTS']:
            defaults = {k.value: v.value for k, v in zip(node.value.keys, node.value.values)
                        if isinstance(v, ast.Constant)}
    return {name: defaults.get(name) for name in names}


def docs_launch_table():
    """Name -> default column of the launch-argument table of docs/node.md (``| argument | default | meaning |``)."""
    lines = (ROOT / 'docs' / 'node.md').read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.replace(' ', '') == '|argument|default|meaning|')
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith('|'):
            break
        cells = [c.strip() for c in line.strip('|').split('|')]
        rows[cells[0].strip('`')] = cells[1]
    return rows


def test_the_docs_launch_table_lists_every_argument_of_the_launch_file():
    """Issue 30: the table omitted use_web_view."""
    declared, table = launch_file_arguments(), docs_launch_table()
    assert sorted(table) == sorted(declared)
    for name, default in declared.items():
        if default in ('true', 'false', 'auto'):   # the literal defaults are shown as they are
            assert table[name] == f'`{default}`', (name, table[name])
