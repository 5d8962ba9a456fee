"""Property-based fuzz tests: hostile files and argument lists against every reader.

Each target generates (and mutates) inputs with hypothesis and asserts one contract: a valid
result, or a :class:`~privelet_gui.engine.PriveletError` whose message names the problem;
never another exception, and never a count that disagrees with a straightforward oracle
count of the generated rows. The project's hypothesis profile is derandomized, so every run
draws the same cases.

How many cases
--------------
CI (``pytest``) runs a few dozen cases per target (see :data:`tests.fuzz.support.CI_CASES`),
about a minute in all. By hand, set ``PRIVELET_FUZZ=1`` for 1,000 cases per target::

    PRIVELET_FUZZ=1 .venv/bin/python -m pytest tests/fuzz tests/gui/test_hostile_projects.py -p no:cacheprovider -o timeout=3600

(``PRIVELET_FUZZ=<n>`` runs n cases per target; the run takes about ten minutes, hence the
longer timeout.) At the end pytest prints, per target, the cases run, how many gave a result
and how many a PriveletError; an unhandled exception or an oracle disagreement fails the
target's test (hypothesis then shrinks it to a small case).
The kill test (``test_kill.py``) kills ``privelet release`` and ``privelet export`` 3 times
each in CI and 50 times each with ``PRIVELET_FUZZ`` set.
"""
