"""Shared fakes of the test suite: in-process stand-ins for what the toolkit talks to.

- :mod:`fakes.hosts`: addresses served in this process (servers in the client's own event
  loop over a socketpair; no port, no thread, no process).
"""
