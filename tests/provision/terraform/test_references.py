"""Every reference resolves: variables are declared, module outputs exist, module arguments are variables of
the module, required variables are passed, and every variable has a description and a type."""

import pytest

from tests.provision.terraform.tf_files import (
    GLOBAL_REF,
    MODULE_REF,
    VAR_REF,
    code,
    module_calls,
    module_dir,
    module_dirs,
    outputs,
    parse,
    tf_files,
    variables,
)

MODULE_FILES = ("versions.tf", "variables.tf", "main.tf", "outputs.tf", "README.md")
META_ARGUMENTS = {"source", "version", "providers", "count", "for_each", "depends_on"}


def _roots(rendered):
    return sorted(p for p in rendered.iterdir() if p.is_dir())


def _directories(rendered):
    return _roots(rendered) + module_dirs()


def test_every_rendered_and_module_file_parses_with_python_hcl2(rendered):
    files = [p for d in _directories(rendered) for p in tf_files(d)]
    assert len(files) > 60
    for path in files:
        assert isinstance(parse(path), dict), path


@pytest.mark.parametrize("module", module_dirs(), ids=lambda p: p.name)
def test_module_has_the_standard_files(module):
    missing = [f for f in MODULE_FILES if not (module / f).exists()]
    assert not missing, f"{module.name} lacks {missing}"


@pytest.mark.parametrize("module", module_dirs(), ids=lambda p: p.name)
def test_every_variable_has_a_description_and_a_type(module):
    for name, body in variables(module).items():
        assert body.get("description"), f"{module.name}: variable {name} has no description"
        assert body.get("type"), f"{module.name}: variable {name} has no type"


def test_every_referenced_variable_is_declared(rendered):
    for directory in _directories(rendered):
        declared = set(variables(directory))
        for path in tf_files(directory):
            used = set(VAR_REF.findall(code(path)))
            assert used <= declared, f"{path}: undeclared variables {sorted(used - declared)}"


def test_every_referenced_module_output_exists(rendered):
    for directory in _directories(rendered):
        calls = module_calls(directory)
        for path in tf_files(directory):
            for name, output in MODULE_REF.findall(code(path)):
                assert name in calls, f"{path}: module.{name} is not called in {directory.name}"
                declared = outputs(module_dir(directory, calls[name]))
                assert output in declared, f"{path}: module {name} has no output {output}"


def test_remote_state_references_exist_in_the_global_root(rendered):
    declared = set(outputs(rendered / "global"))
    for root in _roots(rendered):
        for path in tf_files(root):
            used = set(GLOBAL_REF.findall(code(path)))
            assert used <= declared, f"{path}: global root has no outputs {sorted(used - declared)}"


def test_module_calls_pass_exactly_known_and_required_variables(rendered):
    for directory in _directories(rendered):
        for name, body in module_calls(directory).items():
            target = module_dir(directory, body)
            assert target.is_dir(), f"{directory.name}: module {name} source {body['source']} does not exist"
            declared = variables(target)
            passed = set(body) - META_ARGUMENTS
            assert passed <= set(declared), (
                f"{directory.name}/{name}: unknown arguments {passed - set(declared)}"
            )
            required = {v for v, b in declared.items() if "default" not in b}
            assert required <= passed, f"{directory.name}/{name}: missing {sorted(required - passed)}"
