"""The documentation cannot go stale unnoticed: the configuration reference is what the code
gives, the README's and CONTRIBUTING's links reach files, and the API reference renders only
public modules. (``make docs`` builds the site itself, strictly.)"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_API = (
    "lockgate.common",
    "lockgate.datastream",
    "lockgate.metrics",
    "lockgate.state_processor",
)


def generator() -> ModuleType:
    path = ROOT / "tools" / "gen_config_reference.py"
    spec = importlib.util.spec_from_file_location("gen_config_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_configuration_reference_is_current():
    gen = generator()
    assert gen.PAGE.read_text() == gen.render(), (
        "docs/reference/configuration.md differs from src/lockgate/common/config_options.py: "
        "run `make docs-config` and commit the page"
    )


def test_configuration_reference_lists_every_validated_key():
    from lockgate.common.config_options import VALIDATED_OPTIONS

    page = generator().render()
    missing = [key for key in VALIDATED_OPTIONS if f"### `{key}` {{ #{key} }}" not in page]
    assert not missing


def test_readme_and_contributing_links_reach_files():
    broken = []
    for name in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / name).read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (ROOT / target.split("#", 1)[0]).exists():
                broken.append(f"{name}: {target}")
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def test_api_reference_renders_public_modules_only():
    rendered = [
        line.split()[1]
        for page in sorted((ROOT / "docs" / "api").glob("*.md"))
        for line in page.read_text().splitlines()
        if line.startswith(":::")
    ]
    assert rendered
    internal = [
        name
        for name in rendered
        if not any(name == api or name.startswith(api + ".") for api in PUBLIC_API)
    ]
    assert not internal, f"internal modules in the API reference: {internal}"
