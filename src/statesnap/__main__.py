"""``python -m statesnap``."""

from statesnap.cli import main

raise SystemExit(main())
