"""Export formats: uses json5 when installed, json otherwise."""

import json


def dumps(obj) -> str:
    try:
        import json5  # optional dependency
    except ImportError:
        return json.dumps(obj)
    return json5.dumps(obj)
