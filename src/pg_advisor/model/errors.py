"""The one error type every layer raises for bad input: an errno and a sentence."""
import errno


MESSAGE_MAX = 1000     # characters: a message quotes the input it refuses, cut short


def one_line(text: str) -> str:
    """`text` with every character that is not printable (a newline or an escape sequence
    in a name the user gave) written as repr writes it: an error is one line, and prints
    nothing to the terminal that the user did not see."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class AdvisorError(Exception):
    """Bad input or an impossible request. `code` is a negative errno, as mgr commands return;
    the message is one line, whatever the input it quotes."""

    def __init__(self, code: int, message: str) -> None:
        message = one_line(message[:MESSAGE_MAX])
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
