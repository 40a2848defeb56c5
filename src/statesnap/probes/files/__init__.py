"""The ``files`` probe (:mod:`.probe`): files and directories created, deleted or changed under
the watched roots.  ``_tree`` holds the roots, keys relative to the rootdir and the walk, with
``pathfilter`` deciding which names are out of view; ``_watch`` keeps one inotify watch per
directory (capped, dropped with their tree) through ``inotify``, a minimal ctypes binding, so
that a test that touched nothing costs one read of pending events instead of a walk.  This file
imports nothing, so that importing one part costs no more than it did before the family was a
package.
"""
