import sys

from deepcollapse.cli import main

sys.exit(main())
