"""`python -m topoctl` is the same as the `topoctl` console script."""
import sys

from topoctl.entry import main

if __name__ == "__main__":
    sys.exit(main())
