"""checker.config: defaults, presets, overrides, --set and TOML files."""

from __future__ import annotations

import pytest

from checker.config import coerce, load_config_file, load_toml, parse_set, resolve
from checker.errors import ModelError, UsageError
from checker.model import ModelFamily, Parameter, Preset
from tests.toys import FAMILY


class Fam(ModelFamily):
    name, version = "fam", "1"
    parameters = {
        "brokers": Parameter("brokers", 3, "number of brokers", minimum=1, maximum=5),
        "unclean": Parameter("unclean", False, "allow unclean leader election"),
        "mode": Parameter("mode", "zk", "metadata mode", choices=("zk", "kraft")),
        "ratio": Parameter("ratio", 0.5, "a float", minimum=0, maximum=1),
    }
    presets = {
        "default": Preset("default", "defaults"),
        "small": Preset("small", "one broker", {"brokers": 1}),
        "bad": Preset("bad", "inconsistent", {"brokers": 9}),
        "ghost": Preset("ghost", "unknown key", {"nope": 1}),
    }


F = Fam()


def test_defaults_then_preset_then_overrides():
    assert resolve(F, None, {}) == {"brokers": 3, "unclean": False, "mode": "zk", "ratio": 0.5}
    assert resolve(F, "small", {})["brokers"] == 1
    cfg = resolve(F, "small", {"brokers": "2", "unclean": "yes", "mode": "kraft"})
    assert cfg == {"brokers": 2, "unclean": True, "mode": "kraft", "ratio": 0.5}
    assert list(cfg) == list(F.parameters)  # declaration order


@pytest.mark.parametrize("text,value", [
    ("true", True), ("1", True), ("yes", True), ("on", True), ("TRUE", True),
    ("false", False), ("0", False), ("no", False), ("off", False), (True, True), (0, False),
])
def test_bool_words(text, value):
    assert coerce(F.parameters["unclean"], text) is value


def test_int_parsing_and_range():
    p = F.parameters["brokers"]
    assert coerce(p, " 4 ") == 4
    assert coerce(p, 5) == 5
    for bad in ("x", "2.5", True, [1]):
        with pytest.raises(UsageError, match="expects an integer in 1..5"):
            coerce(p, bad)
    with pytest.raises(UsageError) as e:
        coerce(p, "9")
    msg = str(e.value)
    assert "'brokers'" in msg and "9" in msg and "1..5" in msg and "--set brokers=" in msg
    assert "\n" not in msg


def test_choices_and_floats():
    with pytest.raises(UsageError, match="one of zk, kraft"):
        coerce(F.parameters["mode"], "raft")
    assert coerce(F.parameters["ratio"], "0.25") == 0.25
    with pytest.raises(UsageError, match="out of range"):
        coerce(F.parameters["ratio"], "2")


def test_unknown_key_suggests():
    with pytest.raises(UsageError, match=r"unknown config key 'broker' \(did you mean 'brokers'\?\)"):
        resolve(F, None, {"broker": "1"})


def test_unknown_preset_lists_known():
    with pytest.raises(UsageError) as e:
        resolve(F, "smal", {})
    assert str(e.value) == ("unknown preset 'smal' (did you mean 'small'?) (known: bad, default, ghost, small); "
                            "pick one with --preset NAME (see kmc list presets)")


def test_broken_preset_is_a_model_error():
    with pytest.raises(ModelError, match="preset 'bad'"):
        resolve(F, "bad", {})
    with pytest.raises(ModelError, match="unknown key 'nope'"):
        resolve(F, "ghost", {})


def test_toys_family_resolves_and_property_docs_work():
    cfg = resolve(FAMILY, "tiny", {"n": "4"})
    assert cfg["toy"] == "grid" and cfg["n"] == 4
    assert FAMILY.property_docs()


def test_parse_set():
    assert parse_set(["a=1", "b = x=y", "a=2"]) == {"a": "2", "b": "x=y"}
    assert parse_set(None) == {}
    for bad in ("a", "=1", ""):
        with pytest.raises(UsageError, match="--set expects key=value"):
            parse_set([bad])


def test_load_toml_top_level_and_table(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('preset = "small"\nmodel = "tests.toys:FAMILY"\nbrokers = 2\n[config]\nunclean = true\n')
    assert load_toml(f) == ("small", {"brokers": 2, "unclean": True})
    assert load_config_file(f).model == "tests.toys:FAMILY"
    g = tmp_path / "d.toml"
    g.write_text("brokers = 2\n")
    assert load_toml(g) == (None, {"brokers": 2})


@pytest.mark.parametrize("text,needle", [
    ("brokers = \n", "not valid TOML"),
    ("brokers = [1, 2]\n", "line 1"),
    ('preset = 3\n', "preset must be a non-empty string"),
    ("[config]\nbrokers = 1\n[other]\nx = 1\n", "other is a table"),
    ("brokers = 1\n[config]\nbrokers = 2\n", "both at top level and in [config]"),
])
def test_load_toml_errors(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(UsageError) as e:
        load_toml(f)
    assert needle in str(e.value) and str(f) in str(e.value) and "\n" not in str(e.value)


def test_load_toml_missing_file(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_toml(tmp_path / "nope.toml")


def test_toml_style_fixes():
    """A bad value read from a config file suggests a TOML line, not a --set flag."""
    with pytest.raises(UsageError, match=r"e\.g\. brokers = 3$"):
        resolve(F, None, {"brokers": "three"}, style="toml")
    with pytest.raises(UsageError, match=r'e\.g\. mode = "zk"$'):
        resolve(F, None, {"mode": "etcd"}, style="toml")
    with pytest.raises(UsageError, match=r"e\.g\. unclean = true$"):
        coerce(F.parameters["unclean"], "maybe", "toml")
    with pytest.raises(UsageError, match=r"e\.g\. --set brokers=3$"):
        resolve(F, None, {"brokers": "three"})


def test_config_file_records_lines(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('# comment\npreset = "small"\n\n[config]\nunclean = true\nbrokers = 2\n')
    cf = load_config_file(f)
    assert cf.lines == {"preset": 2, "unclean": 5, "brokers": 6}
    assert cf.where("brokers") == f"config file '{f}' line 6" and cf.where("nope") == f"config file '{f}'"


def test_a_number_is_written_in_ascii_digits_and_is_finite():
    """int() and float() also read '1_0', other scripts' digits and 'nan', which
    compares false with every bound, so it passed any range."""
    from checker.config import coerce
    from checker.model import Parameter

    count, share = Parameter("n", 2, "a count", 1, 20), Parameter("f", 0.5, "a share", 0.0, 1.0)
    assert coerce(count, " 3 ") == 3 and coerce(share, "0.25") == 0.25
    for p, text in ((count, "1_0"), (count, "\u0662"), (share, "nan"), (share, "inf"), (share, "0_5"),
                    (share, "\u0660.5")):
        with pytest.raises(UsageError, match="expects"):
            coerce(p, text)
    with pytest.raises(UsageError, match="expects a number"):
        coerce(share, float("nan"))


def test_a_byte_order_mark_is_read_as_the_start_of_utf8(tmp_path):
    """Some editors write one; tomllib took it for an invalid statement at line 1."""
    f = tmp_path / "bom.toml"
    f.write_bytes(b"\xef\xbb\xbfbrokers = 2\n")
    assert load_toml(f) == (None, {"brokers": 2})
