"""Config merging (file, flags, --set) and one-line validation errors."""

import pytest

from autocomp_core.config import load_config
from autocomp_core.errors import ConfigError


def write(tmp_path, text):
    p = tmp_path / "run.toml"
    p.write_text(text)
    return p


def test_defaults_match_the_original(tmp_path):
    cfg = load_config(write(tmp_path, 'backend = "toy"\nproblem = "sum_squares"\n'))
    s = cfg.search
    assert (
        s.beam_size,
        s.plans_per_candidate,
        s.codes_per_plan,
        s.menu_keep_probability,
        s.iterations,
    ) == (4, 4, 2, 0.25, 8)


def test_merge_order_file_then_flags_then_set(tmp_path):
    path = write(
        tmp_path, 'backend = "toy"\nproblem = "a"\n[search]\nbeam_size = 2\niterations = 3\n'
    )
    cfg = load_config(
        path,
        {"problem": "b", "search": {"beam_size": 5}},
        ["search.beam_size=7", "llm.aliases.fast='openai::gpt-5-mini'", "hardware.line_cost=2"],
    )
    assert cfg.problem == "b" and cfg.search.beam_size == 7 and cfg.search.iterations == 3
    assert cfg.llm.aliases == {"fast": "openai::gpt-5-mini"}
    assert cfg.hardware == {"line_cost": 2}


@pytest.mark.parametrize(
    "text,overrides,needle",
    [
        ('backend = "toy"\nproblem = "a"\n[search]\nbeam_size = 0\n', [], "search.beam_size"),
        (
            'backend = "toy"\nproblem = "a"\n[search]\nbeam_sise = 3\n',
            [],
            "search.beam_sise: unknown key",
        ),
        ('backend = "toy"\n', [], "problem: required"),
        (
            'backend = "toy"\nproblem = "a"\n',
            ["search.menu_keep_probability=1.5"],
            "search.menu_keep_probability",
        ),
        (
            'backend = "toy"\nproblem = "a"\n',
            ["search.prevent_duplicate_level=5"],
            "search.prevent_duplicate_level",
        ),
        ('backend = "toy"\nproblem = "a"\n', ["nonsense"], "expected section.key=value"),
        (
            'backend = "toy"\nproblem = "a"\n[search]\niterations = 2\n[translation]\niterations = 3\n',
            [],
            "translation.iterations cannot exceed",
        ),
        ('backend = "toy"\nproblem = [\n', [], "malformed TOML"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(tmp_path, text, overrides, needle):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text), None, overrides)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")
