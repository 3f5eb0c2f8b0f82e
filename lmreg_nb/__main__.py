"""`python -m lmreg_nb` is `lmreg-nb`."""

from .cli import main

main()
