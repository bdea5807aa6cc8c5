"""The one error type every layer raises for bad input: an errno and a sentence."""
import errno


class AdvisorError(Exception):
    """Bad input or an impossible request. `code` is a negative errno, as mgr commands return."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def invalid(cls, message: str) -> "AdvisorError":
        return cls(-errno.EINVAL, message)

    @classmethod
    def not_found(cls, message: str) -> "AdvisorError":
        return cls(-errno.ENOENT, message)

    @classmethod
    def busy(cls, message: str) -> "AdvisorError":
        return cls(-errno.EBUSY, message)
