"""Spark settings lockgate refuses before a job starts."""

from __future__ import annotations

import pytest

from lockgate.common.config_options import ConfigurationError
from lockgate.runtime.jobmaster.spark_session import check_session


@pytest.mark.parametrize("value", ["true", "TRUE", " true "])
def test_speculative_execution_is_refused_naming_the_setting(value):
    with pytest.raises(ConfigurationError, match=r"spark.speculation=true\) is not supported yet"):
        check_session({"spark.speculation": value})


@pytest.mark.parametrize("conf", [{}, {"spark.speculation": "false"}])
def test_sessions_without_speculation_pass(conf):
    check_session(conf)
