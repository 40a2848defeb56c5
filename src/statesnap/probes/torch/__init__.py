"""The ``torch`` probe (:mod:`.probe`): PyTorch's process-global state, read only once ``torch``
is imported.  ``probe`` is all a session loads while torch is absent (its token is one
``sys.modules`` lookup); from then on it hands the work to ``state``, which reads the flag table
of ``flags`` (each flag: a key, how to read it, how to put it back), the dynamo/inductor config
modules through ``config``, and CUDA through ``cuda`` (never initialising it).  Every import in
the family is absolute: this package is ``statesnap.probes.torch`` and must never be taken for
the real ``torch``.  This file imports nothing, so that the probe's cost while torch is absent
stays one lookup.
"""
