import sys

from tritonfp8.cli import main

sys.exit(main())
