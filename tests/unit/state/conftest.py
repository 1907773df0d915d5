"""``new_backend``: a factory of keyed state backends, one test per backend kind."""

from __future__ import annotations

import pytest
from keyed_backends import KINDS, BackendFactory


@pytest.fixture(params=KINDS)
def new_backend(request, tmp_path):
    factory = BackendFactory(request.param, tmp_path)
    yield factory
    factory.close_all()
