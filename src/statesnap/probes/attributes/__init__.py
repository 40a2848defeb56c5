"""The ``attributes`` probe (:mod:`.probe`): module-level state of the project's own modules, kept
cheap by answering "did anything move?" with one token and describing only what did.  ``scan``
keeps the tracked modules and what is watched in each (and restores them); ``_watch`` flattens
every watched object into the token, with ``_subclasswatch`` adding subclass lists (where
``_subclassreaders`` says a module's code looks at them); ``_refresh`` describes a moved module
again, walking a namespace only when ``_same`` cannot show it still binds what it did;
``describe`` writes the recorded fingerprints (with ``_content``'s ``eq~`` digest and
``_threadlocal``'s reader), and ``_fingerprints`` reads them back to say what kind of change a
key is.  ``describe`` and ``scan`` carry no underscore because other probes use them (the
``process``, ``fixtures`` and ``scistack`` probes show values in the same fingerprint format,
and ``fixtures`` finds the project's modules as this probe does).  This file imports nothing,
so that importing one part costs no more than it did before the family was a package.
"""
