"""Locks that a fork() child gets fresh.

A child of fork() has only the thread that called fork(). A lock that
another thread of the parent held at that moment (a run in progress, a
compile, a cache lookup) stays held in the child for ever, and the child's
first use of the object would wait for a thread that does not exist there.
So every lock of the package that guards something a child may use is made
by `lock` below, and after a fork the child sets a new, free lock in its
place. What such a lock guards is per-call state (filled again by the next
call) or a cache (at worst a miss), so the child loses nothing it needs.
The team's locks have their own hook (team.py), which also lets go of the
parent's C team."""

import os
import threading
import weakref

# owner -> [(attribute names sharing one lock, factory)]; a module or object
_OWNERS = weakref.WeakKeyDictionary()


def lock(owner, *names, factory=threading.Lock):
    """A new lock (factory()) set as owner.<name> for each of names (they
    share it), set again, new, in a fork child. Returns the lock."""
    new = factory()
    for name in names:
        setattr(owner, name, new)
    _OWNERS.setdefault(owner, []).append((names, factory))
    return new


def _after_fork_in_child():
    for owner, entries in list(_OWNERS.items()):
        for names, factory in entries:
            new = factory()
            for name in names:
                setattr(owner, name, new)


os.register_at_fork(after_in_child=_after_fork_in_child)
