"""Package-wide properties of scorers.text: no private attributes of other packages, lazy imports, pickling."""
from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import scorers
import scorers.text

TEXT_MODULES = sorted(Path(scorers.text.__file__).parent.glob("*.py"))


def test_no_private_attribute_of_another_package_is_read_outside_the_guard():
    """``x._name`` only on our own objects (``self``/``cls``); sacrebleu's private parts only via sacrebleu_private."""
    found = []
    for path in TEXT_MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr", "setattr"):
                if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                        and str(node.args[1].value).startswith("_") and not str(node.args[1].value).startswith("__"):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found


def test_importing_scorers_loads_no_reference_library():
    script = ("import sys, scorers, scorers.text.bleu, scorers.text.rouge, scorers.text.meteor, scorers.text.wordnet\n"
              "print(sorted({m.split('.')[0] for m in sys.modules} & {'sacrebleu', 'nltk', 'rouge_score'}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout
