"""The environment for a measured `draguard` process: bytecode as an installed draguard has it.

`pip install` compiles every module, so a user's `draguard` never compiles its sources at
start. This machine sets PYTHONDONTWRITEBYTECODE, which would make each measured process of
the editable tree compile them again; the children run without it, with the cache in a
folder of its own (PYTHONPYCACHEPREFIX), not in the source tree. The first run writes the
cache: benches warm up once before they measure.
"""

from __future__ import annotations

import os
import tempfile

BYTECODE = os.path.join(tempfile.gettempdir(), "draguard-bench-bytecode")
INSTALLED_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                 "PYTHONPYCACHEPREFIX": BYTECODE}
