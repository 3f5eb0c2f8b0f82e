"""The sandbox: a local platform (FastAPI + SQLite) and a mock school model.

Light on purpose: import :mod:`lmreg_nb.sandbox.process` for
``running_sandbox``, :mod:`.app` / :mod:`.store` for the platform itself,
:mod:`.school_model` for the mock school model.
"""
