"""agents/registry.py's Registry on a kind of its own (a toy record), so that each rule is seen
alone: who registered a record, a faulty record refused, records replaced and removed for a test,
the built-in modules loaded once, an installed entry point naming a record (a dotted name in its
module), and the one-line refusal of an unknown name with at most three of the closest names."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from agents.registry import Registry, closest, load_object, split_spec

GROUP = "cruise_agent_tests.toys"


@dataclass(frozen=True)
class Toy:
    name: str
    size: int = 1


def size_fault(toy) -> str | None:
    return None if getattr(toy, "size", 0) > 0 else "its size must be positive"


def test_a_record_registered_without_a_module_is_owned_by_the_module_that_called_register():
    toys: Registry[Toy] = Registry("toy")
    toys.register(Toy("ball"))
    assert toys.registered_by("ball") == __name__ == toys.registrants()["ball"]
    assert toys.records() == {"ball": Toy("ball")} and len(toys) == 1 and list(toys) == ["ball"]


def test_a_faulty_record_is_refused_naming_it_and_its_module_and_a_nameless_one_by_what_it_is():
    toys: Registry[Toy] = Registry("toy", check=size_fault)
    with pytest.raises(ValueError) as refused:
        toys.register(Toy("flat", size=0), module="pkg.toys")
    assert str(refused.value) == "toy 'flat' from pkg.toys refused: its size must be positive"
    with pytest.raises(ValueError) as refused:
        toys.register("not a toy", module="pkg.toys")
    assert str(refused.value) == "toy 'not a toy' from pkg.toys refused: its size must be positive"
    assert "flat" not in toys


def test_a_record_the_check_finds_wrong_raises_the_registrys_own_refusal_and_a_taken_name_too():
    class ToyRefused(ValueError):
        pass

    toys: Registry[Toy] = Registry("toy", check=size_fault, refused=ToyRefused)
    with pytest.raises(ToyRefused):
        toys.register(Toy("flat", size=0), module="pkg.a")
    toys.register(Toy("ball"), module="pkg.a")
    with pytest.raises(ToyRefused) as refused:
        toys.register(Toy("ball", size=2), module="pkg.b")
    assert str(refused.value) == ("a toy named 'ball' is registered already, by pkg.a; pkg.b cannot register "
                                  "another of that name: give it a name of its own")


def test_a_record_is_registered_under_the_name_given_or_the_one_its_kind_reads_off_it():
    toys: Registry[Toy] = Registry("toy", name_of=lambda toy: f"{toy.name}-{toy.size}")
    toys.register(Toy("ball", 2), module="pkg")
    toys.register(Toy("kite"), module="pkg", name="sky")
    assert sorted(toys) == ["ball-2", "sky"]


def test_a_test_may_replace_and_remove_a_record_and_owns_what_it_puts_there():
    toys: Registry[Toy] = Registry("toy")
    toys.register(Toy("ball"), module="pkg")
    toys["ball"] = Toy("ball", 5)
    assert toys["ball"] == Toy("ball", 5) and toys.registered_by("ball") == "a test"
    del toys["ball"]
    assert "ball" not in toys and toys.registrants() == {}


SHELF: Registry[Toy] | None = None  # the registry toy_built_ins registers into, set by the test below


def test_the_built_in_modules_are_imported_on_the_first_look_up_and_only_then(tmp_path, monkeypatch):
    (tmp_path / "toy_built_ins.py").write_text(
        "from tests.test_registry_records import SHELF, Toy\n"
        "SHELF.register(Toy('ball'))\n"
        "assert 'ball' in SHELF  # a look-up while loading: no second import\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_built_ins", raising=False)
    toys: Registry[Toy] = Registry("toy", built_in=("toy_built_ins",))
    monkeypatch.setattr(sys.modules[__name__], "SHELF", toys)
    assert "toy_built_ins" not in sys.modules  # nothing imported until a look-up
    assert sorted(toys) == ["ball"] and toys.registered_by("ball") == "toy_built_ins"
    assert "toy_built_ins" in sys.modules
    del sys.modules["toy_built_ins"]
    assert "ball" in toys and "toy_built_ins" not in sys.modules  # loaded once: not imported again


def test_an_installed_entry_point_may_name_a_record_by_a_dotted_name_in_its_module(tmp_path, monkeypatch):
    (tmp_path / "toy_shelf.py").write_text("from tests.test_registry_records import Toy\n\n\n"
                                           "class Shelf:\n    TOP = Toy('top-toy')\n")
    info = tmp_path / "toy_shelf-0.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-shelf\nVersion: 0.2\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\ntop = toy_shelf:Shelf.TOP\nlow = toy_shelf:Shelf.LOW\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    toys: Registry[Toy] = Registry("toy", group=GROUP)
    try:
        assert toys.installed() == ["low", "top"]
        assert toys.named("top") == Toy("top-toy") and toys.registered_by("top") == "toy_shelf:Shelf.TOP"
        with pytest.raises(ValueError) as refused:
            toys.named("low")
        assert str(refused.value) == (f"toy 'low': entry point 'low = toy_shelf:Shelf.LOW' of distribution toy-shelf "
                                      f"0.2 ({GROUP}): module 'toy_shelf' has no 'Shelf.LOW'")
    finally:
        sys.modules.pop("toy_shelf", None)


def test_an_unknown_name_lists_every_name_and_at_most_three_of_the_closest():
    toys: Registry[Toy] = Registry("toy", group=GROUP)
    for name in ("ball1", "ball2", "ball3", "ball4", "kite"):
        toys.register(Toy(name), module="pkg")
    # difflib's order: the best first, ties the later in sorted order first
    assert closest("ball", toys) == ["ball4", "ball3", "ball2"]
    with pytest.raises(ValueError) as refused:
        toys.named("bal", hint=", or make one")
    assert str(refused.value) == ("unknown toy 'bal'; choose one of ['ball1', 'ball2', 'ball3', 'ball4', 'kite'], or "
                                  "make one; did you mean 'ball4' or 'ball3' or 'ball2'?")
    assert toys.find("bal") is None and Registry("toy").installed() == []


def test_a_registry_without_a_group_finds_no_entry_point_and_names_none_installed(tmp_path, monkeypatch):
    toys: Registry[Toy] = Registry("toy")
    assert toys.find("top") is None and toys.registered_nothing("top") is None
    assert toys.unknown("top") == "unknown toy 'top'; choose one of []"


def test_module_and_name_split_at_the_first_colon_and_a_bare_string_is_no_module_and_name():
    assert split_spec("pkg.mod:Name:more") == ("pkg.mod", "Name:more")
    assert split_spec("bare") == ("", "bare")
    with pytest.raises(ValueError) as refused:
        load_object("bare")
    assert str(refused.value) == "object 'bare': expected MODULE:NAME"
    with pytest.raises(ValueError) as refused:
        load_object("agents.registry:Registry:more")
    assert str(refused.value) == "object 'agents.registry:Registry:more': module 'agents.registry' has no 'Registry:more'"


def test_an_unknown_name_without_a_hint_ends_with_the_choices_or_the_closest():
    toys: Registry[Toy] = Registry("toy")
    toys.register(Toy("ball"), module="pkg")
    with pytest.raises(ValueError) as refused:
        toys.named("zz")
    assert str(refused.value) == "unknown toy 'zz'; choose one of ['ball']"


def test_an_installed_name_once_loaded_is_listed_among_the_registered_only(tmp_path, monkeypatch):
    """The refusal's lists are every name a user may give, each once: an installed record
    loaded already is a registered one, and only those not loaded yet are "installed"."""
    (tmp_path / "toy_loft.py").write_text("from tests.test_registry_records import Toy\n\nTOP = Toy('top')\n"
                                          "KITE = Toy('kite')\n")
    info = tmp_path / "toy_loft-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-loft\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\ntop = toy_loft:TOP\nkite = toy_loft:KITE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    toys: Registry[Toy] = Registry("toy", group=GROUP)
    try:
        assert toys.named("top") == Toy("top")
        assert toys.unknown("tpo") == "unknown toy 'tpo'; choose one of ['top'], one installed ['kite']; did you mean 'top'?"
        assert toys.named("kite") == Toy("kite")
        assert toys.unknown("tpo") == "unknown toy 'tpo'; choose one of ['kite', 'top']; did you mean 'top'?"
    finally:
        sys.modules.pop("toy_loft", None)
