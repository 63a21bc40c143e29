"""Exceptions: one per sk_status, each carrying the library's message.

Every exception is a SuperkernelError, and also the built-in exception a
Python caller would catch for that kind of mistake (a bad shape is a
ValueError, an unsupported dtype a TypeError, ...), so generic handlers work.
"""

# The order of SK_STATUS_MAP in superkernel.h.
STATUS_NAMES = (
    "OK",
    "INVALID_ARGUMENT",
    "INVALID_SHAPE",
    "INVALID_DTYPE",
    "INVALID_ATTRIBUTE",
    "INVALID_STATE",
    "NOT_FOUND",
    "UNSUPPORTED",
    "OUT_OF_MEMORY",
    "SYSTEM_ERROR",
    "INTERNAL",
    "TIMEOUT",
)


class SuperkernelError(Exception):
    """A call into the library failed. `status` is the sk_status name
    ("INVALID_SHAPE"), `message` the library's message."""

    status = "INTERNAL"

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


def _error(name, status, builtin):
    """The exception class of one status: a SuperkernelError and builtin."""
    return type(name, (SuperkernelError, builtin), {"status": status, "__module__": __name__})


# One class per status (OK aside), each also the built-in exception named.
InvalidArgumentError = _error("InvalidArgumentError", "INVALID_ARGUMENT", ValueError)
InvalidShapeError = _error("InvalidShapeError", "INVALID_SHAPE", ValueError)
InvalidDtypeError = _error("InvalidDtypeError", "INVALID_DTYPE", TypeError)
InvalidAttributeError = _error("InvalidAttributeError", "INVALID_ATTRIBUTE", ValueError)
InvalidStateError = _error("InvalidStateError", "INVALID_STATE", RuntimeError)
NotFoundError = _error("NotFoundError", "NOT_FOUND", LookupError)
UnsupportedError = _error("UnsupportedError", "UNSUPPORTED", NotImplementedError)
OutOfMemoryError = _error("OutOfMemoryError", "OUT_OF_MEMORY", MemoryError)
SystemError_ = _error("SystemError_", "SYSTEM_ERROR", OSError)
InternalError = _error("InternalError", "INTERNAL", RuntimeError)
TimeoutError_ = _error("TimeoutError_", "TIMEOUT", TimeoutError)

_BY_STATUS = {cls.status: cls for cls in SuperkernelError.__subclasses__()}


def from_status(status, message):
    """The exception for an sk_status code."""
    name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "INTERNAL"
    cls = _BY_STATUS.get(name, SuperkernelError)
    return cls(message, name)
