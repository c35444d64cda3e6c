import pytest

from provision.terraform.hcl import inline, literal

CASES = [
    ("plain", "us-west-2", '"us-west-2"'),
    ("template sequences are escaped", "a ${b} %{c}", '"a $${b} %%{c}"'),
    ("quotes", 'say "hi"', '"say \\"hi\\""'),
    ("bool", True, "true"),
    ("null", None, "null"),
    ("number", 65010, "65010"),
    ("list", ["a", 1], '["a", 1]'),
    ("empty map", {}, "{}"),
    ("object", {"key": "k", "dotted.key": "v"}, '{ key = "k", "dotted.key" = "v" }'),
]


@pytest.mark.parametrize(("value", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_inline(value, expected):
    assert inline(value) == expected


def test_map_aligns_like_terraform_fmt():
    assert literal({"a": "1", "long/key": "2"}, 2) == '{\n    "a"        = "1"\n    "long/key" = "2"\n  }'


def test_list_of_objects_is_one_per_line():
    assert literal([{"key": "a"}], 2) == '[\n    { key = "a" },\n  ]'


def test_unknown_type_is_refused():
    with pytest.raises(TypeError):
        inline(object())
