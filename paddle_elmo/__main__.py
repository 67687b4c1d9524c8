"""`python -m paddle_elmo SUBCOMMAND`: the same as the `paddle-elmo` command."""
import sys

from paddle_elmo.cli import main

if __name__ == '__main__':
    sys.exit(main())
