"""Errors raised when the sandbox itself fails, as opposed to the command it ran."""

from __future__ import annotations


class SandboxError(Exception):
    """The sandbox could not run the command: an infrastructure failure, never a PR failure."""


class EngineUnavailable(SandboxError):
    """No Docker engine answers."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"no Docker engine is reachable ({detail}); start one with "
            "`dockerd &` (Debian: `apt-get install -y docker.io`) or run scripts/engine.sh"
        )


class ImageMissing(SandboxError):
    """The image a run needs has not been built."""

    def __init__(self, image: str, build_command: str = "patchgate sandbox build") -> None:
        self.image = image
        super().__init__(f"image {image!r} is missing; build it with `{build_command}`")


class ImageBuildError(SandboxError):
    """Building an image failed; the message names what failed."""
