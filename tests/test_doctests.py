"""The examples in public docstrings run."""

from __future__ import annotations

import doctest

import pytest

import gold.late
import lakestreams.api
import lakestreams.spark
import silver.adaptddl
import silver.ddl
import silver.dictionary
import silver.evolution
import silver.types


@pytest.mark.parametrize("module", [gold.late, lakestreams.api, lakestreams.spark, silver.dictionary, silver.ddl, silver.adaptddl, silver.evolution, silver.types])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
