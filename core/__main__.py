"""`python -m core COMMAND [flags]` (core/cli/); `python -m core "a description"` is the reverse dictionary."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
