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


class InvalidArgumentError(SuperkernelError, ValueError):
    status = "INVALID_ARGUMENT"


class InvalidShapeError(SuperkernelError, ValueError):
    status = "INVALID_SHAPE"


class InvalidDtypeError(SuperkernelError, TypeError):
    status = "INVALID_DTYPE"


class InvalidAttributeError(SuperkernelError, ValueError):
    status = "INVALID_ATTRIBUTE"


class InvalidStateError(SuperkernelError, RuntimeError):
    status = "INVALID_STATE"


class NotFoundError(SuperkernelError, LookupError):
    status = "NOT_FOUND"


class UnsupportedError(SuperkernelError, NotImplementedError):
    status = "UNSUPPORTED"


class OutOfMemoryError(SuperkernelError, MemoryError):
    status = "OUT_OF_MEMORY"


class SystemError_(SuperkernelError, OSError):
    status = "SYSTEM_ERROR"


class InternalError(SuperkernelError, RuntimeError):
    status = "INTERNAL"


class TimeoutError_(SuperkernelError, TimeoutError):
    status = "TIMEOUT"


_BY_STATUS = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        InvalidShapeError,
        InvalidDtypeError,
        InvalidAttributeError,
        InvalidStateError,
        NotFoundError,
        UnsupportedError,
        OutOfMemoryError,
        SystemError_,
        InternalError,
        TimeoutError_,
    )
}


def from_status(status, message):
    """The exception for an sk_status code."""
    name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "INTERNAL"
    cls = _BY_STATUS.get(name, SuperkernelError)
    return cls(message, name)
