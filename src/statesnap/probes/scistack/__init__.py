"""The ``scistack`` probe (:mod:`.probe`): the global settings of numpy, pandas, matplotlib and
scikit-learn, read only once the library is imported.  ``probe`` is what a session loads (a
token is one ``sys.modules`` lookup while numpy is absent); ``_watch`` holds the machinery, one
watcher per library found in ``sys.modules``; ``_libs`` has the numpy, pandas and scikit-learn
watchers and ``_mpl`` matplotlib's (``rcParams``, the backend, pyplot's figures), loaded only
when their library is.  This file imports nothing, so that the probe costs nothing more in a
session that never imports these libraries.
"""
