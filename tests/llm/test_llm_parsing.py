"""Reading plans, code and structured edits out of real-looking (and broken) responses."""

from __future__ import annotations

import json

import pytest

from autocomp_core.llm.parsing import (
    EDITS_JSON_SCHEMA,
    Edit,
    EditApplyError,
    EditParseError,
    apply_edits,
    extract_code,
    extract_plan,
    fenced_blocks,
    parse_edit_response,
    parse_edits,
)

GEMMINI_ANSWER = """I'll apply loop tiling so that each tile of A stays in the scratchpad.

Here is the relevant part of the original code:

```c
for (int k = 0; k < K; k++) { /* old */ }
```

Optimized code:

```c
void solution(elem_t A[64][64], elem_t B[64][64], elem_t C[64][64]) {
    // tile the K loop by 16 so a tile of A fits in one scratchpad bank
    for (int k0 = 0; k0 < 64; k0 += 16) {
        config_ld(64 * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 0);
        for (int k = k0; k < k0 + 16; k++) {
            mvin(&A[0][k], SPAD_ADDR(k), 16, 16);
        }
    }
    fence();
}
```

To call it:

```c
solution(A, B, C);
```

This reduces the number of `mvin` instructions by 4x."""

KERNELBENCH_ANSWER = '''<think>
The reference does a matmul then relu; fuse them.
</think>

First install the extension toolchain:

```bash
pip install ninja
```

```python
import torch
from torch.utils.cpp_extension import load_inline

source = """
__global__ void fused(const float* x, float* y, int n) { }
"""

class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.relu(a @ b)
```

The fused kernel avoids one round trip to global memory.'''


def test_llm_extract_code_picks_the_full_program_not_snippets():
    code = extract_code(GEMMINI_ANSWER, "c", anchor="void solution")
    assert code.startswith("void solution(") and code.rstrip().endswith("}")
    assert "fence();" in code and "solution(A, B, C);" not in code.split("}")[-1]
    # Without an anchor the last full-size block still wins over the trailing usage line.
    assert extract_code(GEMMINI_ANSWER, "c") == code


def test_llm_extract_code_python_prefers_the_language_block():
    code = extract_code(KERNELBENCH_ANSWER, "python", anchor="class ModelNew")
    assert code.startswith("import torch") and "class ModelNew" in code
    assert "pip install" not in code


def test_llm_extract_code_related_tags_and_untagged_blocks():
    assert extract_code("```cpp\nint f() { return 1; }\n```", "c") == "int f() { return 1; }"
    assert extract_code("```\nx = 1\n```", "python") == "x = 1"
    assert extract_code("~~~py\nprint(1)\n~~~", "python") == "print(1)"


def test_llm_extract_code_truncated_fence_still_counts():
    text = "Here it is:\n```python\nimport numpy as np\ndef f(x):\n    return x *"
    assert extract_code(text, "python") == "import numpy as np\ndef f(x):\n    return x *"


def test_llm_extract_code_without_fences_brace_matches_c():
    text = (
        "Sure! Here is the optimized version.\n\n#include <stdint.h>\n"
        "static int helper(int x) {\n  return x /* } */ * 2; // }\n}\n\n"
        "void solution(int *a) {\n  if (a) { a[0] = '}'; }\n}\n\n"
        "It removes the redundant branch."
    )
    code = extract_code(text, "c")
    assert code.startswith("#include <stdint.h>") and code.endswith("a[0] = '}'; }\n}")
    assert "It removes" not in code
    only = extract_code(
        "Sure! void solution(int *a) {\n  a[0] = 1;\n}\nDone.", "c", anchor="void solution"
    )
    assert only == "void solution(int *a) {\n  a[0] = 1;\n}"


def test_llm_extract_code_without_fences_python():
    text = (
        "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x\n\nThis version is faster than the reference one."
    )
    assert extract_code(text, "python", anchor="class ModelNew").endswith("return x")


def test_llm_extract_code_none_when_there_is_no_code():
    assert extract_code("I could not find an improvement for this kernel.", "c") is None
    assert extract_code("", "python") is None
    assert extract_code("```text\nLatency: 10 cycles\n```", "c") is None
    assert extract_code("```python\nprint(1)\n```", "c", anchor="void solution") is None


def test_llm_fenced_blocks_keep_longer_fences_intact():
    text = "````markdown\n```c\nint x;\n```\n````\n```c\nint y;\n```"
    blocks = fenced_blocks(text)
    assert [b.language for b in blocks] == ["markdown", "c"]
    assert blocks[0].body == "```c\nint x;\n```" and blocks[1].body == "int y;"


@pytest.mark.parametrize(
    "text, plan",
    [
        (
            "<think>Let me weigh tiling vs unrolling.</think>\n\nPlan: tile the K loop by 16.",
            "Plan: tile the K loop by 16.",
        ),
        ("<think>a</think> b </budget:thinking>\nUse double buffering.", "Use double buffering."),
        ("<planning>steps</planning>The plan: fuse loops.", "The plan: fuse loops."),
        (
            "<think>Only reasoning, then the model stopped.</think>",
            "Only reasoning, then the model stopped.",
        ),
        ("  Plan without tags.  ", "Plan without tags."),
        ("<think>unclosed reasoning and plan", "unclosed reasoning and plan"),
    ],
)
def test_llm_extract_plan(text, plan):
    assert extract_plan(text) == plan


CODE = "void f() {\n    int a = 0;\n    int b = 0;\n    a = a + 1;\n}\n"


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"plan": "p", "edits": [{"old_str": "a + 1", "new_str": "a + 2"}]}),
        "Here are the edits:\n```json\n"
        + json.dumps({"plan": "p", "edits": [{"old_str": "a + 1", "new_str": "a + 2"}]})
        + "\n```\nDone.",
        json.dumps({"$plan": "p", "$edits": [{"$old_str": "a + 1", "$new_str": "a + 2"}]}),
        json.dumps({"old_str": "a + 1", "new_str": "a + 2"}),
        json.dumps(
            {"code_edits": {"plan": "p", "edits": [{"old_str": "a + 1", "new_str": "a + 2"}]}}
        ),
        json.dumps(json.dumps({"plan": "p", "edits": [{"old_str": "a + 1", "new_str": "a + 2"}]})),
        json.dumps({"plan": "p", "edits": json.dumps([{"old_str": "a + 1", "new_str": "a + 2"}])}),
        'Sure. {"plan": "p", "edits": [{"search": "a + 1", "replace": "a + 2"}]} Hope it helps',
    ],
)
def test_llm_parse_edits_recovers_shapes(text):
    edits = parse_edits(text)
    assert edits == [Edit("a + 1", "a + 2")]
    assert "a = a + 2;" in apply_edits(CODE, edits)


def test_llm_parse_edits_raw_newlines_and_empty_list():
    raw = '{"plan": "x", "edits": [{"old_str": "int a = 0;\n", "new_str": "int a = 1;\n"}]}'
    assert parse_edits(raw) == [Edit("int a = 0;\n", "int a = 1;\n")]
    plan, edits = parse_edit_response('{"plan": "nothing to do", "edits": []}')
    assert plan == "nothing to do" and edits == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("I'm sorry, I can't produce edits for this.", "not JSON"),
        ('{"plan": "p", "edits": "oops"}', "not JSON|string"),
        ('{"plan": "p", "edits": [{"new_str": "x"}]}', "edit 1 has no string old_str"),
        ('{"plan": "p", "changes": [], "notes": ""}', "no 'edits' list"),
        ('{"plan": "p", "edits": [42]}', "edit 1 is a int"),
        ("[1, 2", "not JSON"),
    ],
)
def test_llm_parse_edits_malformed(text, message):
    with pytest.raises(EditParseError, match=message):
        parse_edits(text)


def test_llm_apply_edits_exact_replaces_every_occurrence_in_order():
    code = "x = 1\ny = x + x\n"
    out = apply_edits(code, [Edit("x", "z"), Edit("z + z", "2 * z")])
    assert out == "z = 1\ny = 2 * z\n"


def test_llm_apply_edits_whitespace_tolerant_window_reindents():
    edit = Edit("int b = 0;\n  a  =  a + 1;", "int b = 5;\na = a * 2;")
    out = apply_edits(CODE, [edit])
    assert out == "void f() {\n    int a = 0;\n    int b = 5;\n    a = a * 2;\n}\n"


def test_llm_apply_edits_names_the_failing_edit():
    with pytest.raises(EditApplyError, match=r"edit 2 of 2: old_str not found.*'missing line'"):
        apply_edits(CODE, [Edit("a + 1", "a + 3"), Edit("missing line", "x")])
    with pytest.raises(EditApplyError, match="empty old_str"):
        apply_edits(CODE, [Edit("", "x")])
    assert apply_edits(CODE, [Edit("nothing", "nothing")]) == CODE  # identical: skipped


def test_llm_edits_schema_shape():
    schema = EDITS_JSON_SCHEMA["schema"]
    assert EDITS_JSON_SCHEMA["name"] == "code_edits" and EDITS_JSON_SCHEMA["strict"] is True
    assert schema["required"] == ["plan", "edits"]
    assert schema["properties"]["edits"]["items"]["required"] == ["old_str", "new_str"]
